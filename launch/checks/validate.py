"""Cross-field checks of a run config, at resolve time: every problem found before anything starts.

The checks are plain functions in `launch/checks/rules/` (one rule each), run over a `Context`
(`launch/checks/context.py`). Topology and batch rules run once per `Scope`: the root hardware, or each
train stage with its own hardware overrides merged in and its curriculum. A rule returns Problems with
the key, message and fix; the source (file or override) is filled in here from the provenance.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from launch.checks.bound_ports import bound_port_problems
from launch.checks.config_walk import ConfigWalk
from launch.checks.context import EVERY_STAGE, Context, Scope, Selection
from launch.checks.ledger import (
    claims_of,
    duplicate_gpus,
    first_unprivileged_port,
    ledger_problems,
    privileged_port_problems,
)
from launch.checks.probes import checkouts_here, interpreters_import_t3rl, model_dirs_required
from launch.checks.rules import RULES, SCOPE_RULES
from launch.config.errors import ConfigError, Problem
from launch.config.overlay import overlay
from launch.config.provenance import Provenance
from launch.config.schema import HardwareConfig, RunConfig, TrainStage
from launch.plan.build import PlanContext, build_plan

if TYPE_CHECKING:
    from launch.plan.build import Plan
from launch.config.schema_errors import numbers_misread, problems_from_validation


def validate(
    run: RunConfig, data: Mapping[str, Any], provenance: Provenance, config_dirs: Sequence[str] = ()
) -> list[Problem]:
    """Every problem (errors and warnings) of a schema-valid run config, each with its source."""
    return validate_and_plan(run, data, provenance, config_dirs)[0]


def validate_and_plan(
    run: RunConfig,
    data: Mapping[str, Any],
    provenance: Provenance,
    config_dirs: Sequence[str] = (),
    plan_in: Callable[[RunConfig], PlanContext] | None = None,
    record_dir: str | None = None,
    *,
    plans: bool = False,
    selection: Selection = EVERY_STAGE,
) -> tuple[list[Problem], Plan | None]:
    """`validate`, and the plan its checks built (None when a rule refused the config first): in the
    context `plan_in` gives for the run, else in a trial context of placeholder paths. The plan's checks
    of this machine judge the stages `selection` runs (`--from`/`--only`)."""
    scopes, problems = build_scopes(run, data, provenance)
    ctx = Context(
        run=run,
        data=data,
        provenance=provenance,
        scopes=tuple(scopes),
        config_dirs=tuple(config_dirs),
        scope_checks=SCOPE_RULES,
        builds=lambda trial: trial_plan(trial)[0] is not None,
        record_dir=record_dir,
        plans=plans,
        walked=ConfigWalk(data, run),
    )
    for rule in RULES:
        problems.extend(rule(ctx))
    plan = None
    if not any(p.severity == "error" for p in problems):
        plan, refused = trial_plan(run, plan_in(run) if plan_in is not None else None)
        problems.extend(refused)
        if plan is not None:
            problems.extend(selection.refused(plan.names()))  # before its warnings are read as the answer
            selected = set(selection.of(plan.names()))
            runs = plan._replace(stages=tuple(s for s in plan.stages if s.name in selected))
            problems.extend(plan_checks(ctx, runs))
    return _unique(p.with_source(_source_of(provenance, p.key)) for p in problems), plan


def import_checks() -> None:
    """Import what `validate` runs (its rules, the trial plan's builders) before it is first called."""
    import launch.checks.rules  # lazy: imported early on purpose, while a child composes (compose_ahead)

    # lazy: imported early on purpose, while a child composes (compose_ahead)
    import launch.plan.build  # noqa: F401


def trial_plan(run: RunConfig, ctx: PlanContext | None = None) -> tuple[Plan | None, list[Problem]]:
    """The plan built in memory (no I/O), or what building it refuses, so that `validate` rejects every
    config `plan` and `run` reject. In `ctx` when given (the plan dir `t3rl plan` will write, so that
    the plan checked is the plan written), else in placeholder paths (the plan is dropped after the
    checks, so its files are left without text)."""
    if ctx is None:
        where = Path.cwd() / "<run dir>"
        ctx = PlanContext(
            where, Path.cwd(), "<t3rl>", sys.executable, "<run id>", dict(os.environ), texts=False
        )
    try:
        return build_plan(run, ctx), []
    except ConfigError as error:
        return None, list(error.problems)


def plan_checks(ctx: Context, plan: Plan) -> list[Problem]:
    """Checks of what the plan holds and runs: the resource ledger, the interpreters it starts here."""
    claims = claims_of(ctx.run, plan)
    binds_here = ctx.run.executor.kind != "dry"  # the dry executor starts nothing
    return [
        *ledger_problems(claims, ctx.latest),
        *duplicate_gpus(ctx.run),
        *privileged_port_problems(claims, first_unprivileged_port() if binds_here else 0),
        *(bound_port_problems(claims) if binds_here else ()),
        *interpreters_import_t3rl(ctx, plan),
        *checkouts_here(ctx, plan),
        *model_dirs_required(ctx, plan),
    ]


def _source_of(provenance: Provenance, key: str) -> str:
    """The source of `key`, else of its nearest ancestor some file or override set."""
    parts = key.split(".")
    while parts:
        found = provenance.source(".".join(parts))
        if found:
            return found
        parts.pop()
    return ""


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
        misread = list(numbers_misread(stage.hardware, hardware, prefix))  # `…hardware.nodes=true`
        if misread:
            from launch.config.machine_ints import misread_number_problems  # lazy: only a number misread

            problems += misread_number_problems(misread, provenance, data, under=(prefix, run.hardware))
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
