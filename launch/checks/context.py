"""What a cross-field rule sees: the run config, its provenance, and one `Scope` per training topology.

Rules (`launch/checks/rules/`) and the validator (`launch/checks/validate.py`) both import this module,
so neither imports the other's module for these types.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from launch.checks.config_walk import ConfigWalk
from launch.config.errors import Problem
from launch.config.provenance import Provenance
from launch.config.schema import CurriculumConfig, HardwareConfig, RunConfig
from t3rl_core.records import Record


class _Stages(Protocol):
    """A plan's stages as `Selection.unmade` reads them (launch.plan.build.Plan, a later step's type)."""

    @property
    def stages(self) -> Sequence[Any]: ...

    def names(self) -> list[str]: ...

    def stage(self, name: str) -> Any: ...


class Scope(Record):
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
        return self.hardware.world_size  # the schema's formula (HardwareConfig), not a second one

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


# Which stages of a plan a command runs: one truth read by the pipeline's `decide` (what the executor
# runs) and by the pre-flight's checks of this machine (`launch.checks.validate.plan_checks`), so a check
# never judges a stage the command will not start: `t3rl run --only data` is not warned about the model
# the train stage loads.
class Selection(Record):
    """`--from` / `--only` as given (None: not given)."""

    from_stage: str | None = None
    only: str | None = None

    def of(self, names: Sequence[str]) -> list[str]:
        """The names selected, in plan order. A name that is no stage selects every stage: the checks
        refuse it (`refused`) and so does the pipeline (`decide`), and until then nothing is left unjudged."""
        if self.only is not None:
            return [self.only] if self.only in names else list(names)
        if self.from_stage is not None and self.from_stage in names:
            return list(names[names.index(self.from_stage) :])
        return list(names)

    def refused(self, names: Sequence[str]) -> list[Problem]:
        """What the pipeline's `decide` would refuse of the selection, as the config's own errors: known
        once the plan names its stages, and printed before the config's warnings, not after them."""
        from launch.config.errors import did_you_mean  # lazy: only for a selection given

        if self.from_stage is not None and self.only is not None:
            return [
                Problem(
                    "--only",
                    "use either --from or --only, not both",
                    f"command line options --from {self.from_stage} --only {self.only}",
                    f"drop --from {self.from_stage}",
                )
            ]
        problems = []
        for flag, value in (("--from", self.from_stage), ("--only", self.only)):
            if value is not None and value not in names:
                guess = did_you_mean(value, list(names))
                choices = ", ".join(f"{flag} {n}" for n in names)
                problems.append(
                    Problem(
                        flag,
                        f"{flag} {value}: no such stage in this config's plan (stages: {', '.join(names)})",
                        f"command line option {flag} {value}",
                        f"did you mean {flag} {guess}?" if guess else f"one of {choices}",
                    )
                )
        return problems

    def unmade(
        self, plan: _Stages, exists: Callable[[str], bool] = os.path.exists
    ) -> tuple[str, list[str]] | None:
        """In a record none of whose stages ran (a new run or plan): the first stage selected that reads
        the output of stages nothing will have made (outside the selection, their output not complete
        already), with those stages; None when the selection can start there. The one reading of it, by
        the pipeline's `decide` and before a new record is made (`refuse_selection_of_a_new_record` in
        launch.run.steps): `t3rl run --only train` of a new run is refused before its run dir is made."""
        names = plan.names()
        selected = set(self.of(names))
        for stage in plan.stages:
            if stage.name not in selected:
                continue
            missing = [
                name
                for name in stage.reads_from()
                if name in names and name not in selected and not _complete(plan, name, exists)
            ]
            if missing:
                return stage.name, missing
        return None

    def flag(self) -> str:
        """The option as typed, e.g. `--only train`."""
        return f"--only {self.only}" if self.only is not None else f"--from {self.from_stage}"


def _complete(plan: _Stages, name: str, exists: Callable[[str], bool]) -> bool:
    """The stage's output exists already, whatever made it (its `complete_when` files: a shared cache)."""
    paths = plan.stage(name).complete_when
    return bool(paths) and all(exists(p) for p in paths)


EVERY_STAGE = Selection()


class Context(Record):
    """What the rules see."""

    run: RunConfig
    # The plain resolved config RunConfig was validated from.
    data: Mapping[str, Any]
    provenance: Provenance
    scopes: tuple[Scope, ...]
    config_dirs: tuple[str, ...] = ()
    # The per-scope checks a candidate layout must pass (the rules package's SCOPE_RULES), handed in
    # by the validator so that fix searches need not import the rules they run.
    scope_checks: tuple[Callable[[Scope, Context], Iterable[Problem]], ...] = ()
    # Builds a run's plan in memory, True when it is built (launch.checks.validate.trial_plan, handed in:
    # the rules come before the plan's step); None: no rule builds one.
    builds: Callable[[RunConfig], bool] | None = None
    # The directory the command line names for the command's record (a resumed or previewed run dir,
    # `t3rl plan --out`): the command writes there and probes it itself, and not under paths.runs_dir
    # or paths.plans_dir, which it does not read (launch.checks.rules.local_dirs). None: a new record,
    # under one of those dirs (`plans` says which).
    record_dir: str | None = None
    # The new record is a plan (`t3rl plan`, `t3rl plan -m`): it goes under paths.plans_dir, and a run's
    # (`t3rl run`, `t3rl validate`'s judgement of one, a standalone eval) under paths.runs_dir; each
    # command is judged by the one it writes (a run was refused over an unwritable plans dir).
    plans: bool = False
    # The walk of `data` and `run` the rules share (`walk`), made by the validator; None: one is made
    # on each use (a context made by hand).
    walked: ConfigWalk | None = None

    @property
    def walk(self) -> ConfigWalk:
        """The views of the config the rules read (every leaf, key, list, section), each made once."""
        walked = self.walked
        if walked is not None and walked.of(self.data, self.run):
            return walked
        return ConfigWalk(self.data, self.run)  # another run (a fix tried): its own walk

    @property
    def record_key(self) -> str | None:
        """The config key of the dir the new record goes under; None when the command line names it."""
        if self.record_dir is not None:
            return None
        return "paths.plans_dir" if self.plans or self.run.executor.kind == "dry" else "paths.runs_dir"

    def latest(self, *keys: str) -> str:
        """Of several keys that together break a rule, the one changed last (the likeliest culprit)."""
        # On a tie a key set itself beats one that only inherits its container's source (unset).
        return max(keys, key=lambda k: (self.provenance.order(k), self.provenance.sets(k)))

    @property
    def stages_run_here(self) -> bool:
        """t3rl_core's stages (data, conversions, eval) start on this machine: the local executor, or Ray
        with `other_stages: local` (the dry executor runs nothing; elsewhere they run on the cluster)."""
        executor = self.run.executor
        return executor.kind == "local" or (executor.kind == "ray" and executor.other_stages == "local")


Rule = Callable[[Context], Iterable[Problem]]


def per_scope(check: Callable[[Scope, Context], Iterable[Problem]]) -> Rule:
    """A rule applied to every scope (root hardware or each train stage)."""

    def rule(ctx: Context) -> Iterable[Problem]:
        for scope in ctx.scopes:
            yield from check(scope, ctx)

    rule.__name__ = check.__name__
    rule.__doc__ = check.__doc__
    rule.check = check  # type: ignore[attr-defined]  # for trying a candidate layout in one scope
    return rule
