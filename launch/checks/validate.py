"""Cross-field checks of a run config, at resolve time: every problem found before anything starts.

The checks are plain functions in `launch/checks/rules/` (one rule each), run over a `Context`. Topology and
batch rules run once per `Scope`: the root hardware, or each train stage with its own hardware
overrides merged in and its curriculum. A rule returns Problems with the key, message and fix; the
source (file or override) is filled in here from the provenance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from launch.config.errors import Problem
from launch.config.overlay import overlay
from launch.config.provenance import Provenance
from launch.config.schema import CurriculumConfig, HardwareConfig, RunConfig, TrainStage
from launch.config.schema_errors import problems_from_validation


@dataclass(frozen=True)
class Scope:
    """One training topology: the root hardware, or a train stage's hardware (with overrides) + curriculum."""

    # Train stage name; None = the root hardware section of a config without train stages.
    stage: str | None
    hardware: HardwareConfig
    curriculum: CurriculumConfig | None
    # Hardware fields the stage overrides (their keys live under stages.<stage>.hardware).
    overridden: frozenset[str] = frozenset()

    def hw(self, field: str) -> str:
        """Dotted key of a hardware field as this scope sees it."""
        top = field.split(".")[0]
        return f"stages.{self.stage}.hardware.{field}" if top in self.overridden else f"hardware.{field}"

    def cur(self, field: str) -> str:
        """Dotted key of a curriculum field of this scope's train stage."""
        return f"stages.{self.stage}.curriculum.{field}"

    @property
    def world_size(self) -> int:
        return self.hardware.nodes * self.hardware.gpus_per_node

    @property
    def model_parallel(self) -> int:
        hw = self.hardware
        return hw.tensor_parallel * hw.pipeline_parallel * hw.context_parallel

    @property
    def data_parallel(self) -> int:
        return self.world_size // self.model_parallel

    @property
    def rollout_gpus(self) -> int:
        """GPUs the SGLang engines share: all training GPUs under colocate."""
        hw = self.hardware
        return self.world_size if hw.colocate else (hw.rollout_gpus or 0)


@dataclass(frozen=True)
class Context:
    """What the rules see."""

    run: RunConfig
    # The plain resolved config RunConfig was validated from.
    data: Mapping[str, Any]
    provenance: Provenance
    scopes: tuple[Scope, ...]
    config_dirs: tuple[str, ...] = ()

    def latest(self, *keys: str) -> str:
        """Of several keys that together break a rule, the one changed last (the likeliest culprit)."""
        return max(keys, key=self.provenance.order)


Rule = Callable[[Context], Iterable[Problem]]


def per_scope(check: Callable[[Scope, Context], Iterable[Problem]]) -> Rule:
    """A rule applied to every scope (root hardware or each train stage)."""

    def rule(ctx: Context) -> Iterable[Problem]:
        for scope in ctx.scopes:
            yield from check(scope, ctx)

    rule.__name__ = check.__name__
    rule.__doc__ = check.__doc__
    return rule


def validate(
    run: RunConfig, data: Mapping[str, Any], provenance: Provenance, config_dirs: Sequence[str] = ()
) -> list[Problem]:
    """Every problem (errors and warnings) of a schema-valid run config, each with its source."""
    from launch.checks.rules import RULES

    scopes, problems = build_scopes(run, data, provenance)
    ctx = Context(
        run=run, data=data, provenance=provenance, scopes=tuple(scopes), config_dirs=tuple(config_dirs)
    )
    for rule in RULES:
        problems.extend(rule(ctx))
    return _unique(p.with_source(provenance.source(p.key)) for p in problems)


def build_scopes(
    run: RunConfig, data: Mapping[str, Any], provenance: Provenance
) -> tuple[list[Scope], list[Problem]]:
    """One scope per train stage (root hardware + the stage's overrides); the root alone without any."""
    scopes: list[Scope] = []
    problems: list[Problem] = []
    for name, stage in run.stages.items():
        if not isinstance(stage, TrainStage):
            continue
        prefix = f"stages.{name}.hardware"
        merged = overlay(run.hardware.model_dump(), stage.hardware)
        try:
            hardware = HardwareConfig.model_validate(merged)
        except ValidationError as error:
            problems += problems_from_validation(error, merged, provenance, prefix=prefix, root=data)
            continue
        scopes.append(Scope(name, hardware, stage.curriculum, frozenset(stage.hardware)))
    if not any(isinstance(s, TrainStage) for s in run.stages.values()):
        scopes.append(Scope(None, run.hardware, None))
    return scopes, problems


def _unique(problems: Iterable[Problem]) -> list[Problem]:
    seen: dict[tuple[str, str], Problem] = {}
    for p in problems:
        seen.setdefault((p.key, p.message), p)
    return list(seen.values())
