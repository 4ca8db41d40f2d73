"""A `-m` sweep: every point validated and planned before any starts, each in its own run dir."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from launch.run.exit_codes import EXIT_CONFIG, EXIT_FAILED
from launch.run.steps import (
    execute,
    new_sweep_dir,
    plan_run,
    report_result,
    resolve_overrides,
    write_run_dir,
)

if TYPE_CHECKING:
    from rich.console import Console

    from launch.config.resolve import Resolved
    from launch.plan.build import Plan
    from launch.run.sweep import Point, SweepSummary


def run_sweep(
    overrides: list[str],
    config_dirs: list[str],
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console,
) -> int:
    from datetime import datetime

    from launch.config.errors import ConfigError, Problem
    from launch.run.rundir import RunDir
    from launch.run.search import is_search
    from launch.run.search_runs import run_search_trials
    from launch.run.sweep import (
        SweepSummary,
        check_points,
        expand_points,
        metric_label,
        point_metric,
        print_points_table,
    )

    if is_search(overrides):
        if dry:
            problem = Problem(
                "hparams_search",
                "a search picks its points as it goes: there is nothing to plan ahead",
                fix="plan one trial by giving its values as plain overrides",
            )
            raise ConfigError([problem])
        return run_search_trials(overrides, config_dirs, console)
    points = expand_points(overrides)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    # The sweep dir follows from the first point's runs_dir and name; check_points plans in order.
    sweep_dirs: list[Path] = []
    indexes = iter(range(len(points)))

    def planner(point_overrides: tuple[str, ...]) -> tuple[Resolved, Plan]:
        index = next(indexes)
        resolved = resolve_overrides(list(point_overrides), config_dirs, console)
        if not sweep_dirs:
            sweep_dirs.append(new_sweep_dir(resolved, stamp))
        return resolved, plan_run(resolved, RunDir(sweep_dirs[0] / f"p{index:02d}"))

    sweep_name = f"sweep-{stamp}"
    checks = check_points([_tracked(p, sweep_name) for p in points], planner)
    print_points_table(checks, console)
    if not all(c.ok for c in checks):
        return EXIT_CONFIG
    sweep_dir = sweep_dirs[0]
    first_resolved, first_plan = checks[0].plan
    summary = SweepSummary(
        sweep_dir=sweep_dir,
        name=sweep_name,
        metric_name=metric_label(first_plan.stages, first_resolved.run.objective),
    )
    summary.plan(points)
    failed = 0
    for check, point in zip(checks, points, strict=True):
        resolved, plan = check.plan
        console.rule(f"point {point.index}: {' '.join(point.varying)}")
        status, error = _run_point(summary, point, check.plan, config_dirs, from_stage, only, dry, console)
        metric = None
        if status == "succeeded":
            try:
                metric = point_metric(plan.stages, resolved.run.objective)
            except (OSError, ValueError, KeyError) as err:
                status, error = "failed", f"no metric: {err}"
        summary.update(point.index, status=status, metric=metric, error=error)
        failed += status not in ("succeeded", "planned")
    console.print(
        f"sweep: {sweep_dir / 'sweep.md'} ({len(points) - failed}/{len(points)} ok)", soft_wrap=True
    )
    return EXIT_FAILED if failed else 0


def _run_point(
    summary: SweepSummary,
    point: Point,
    planned: tuple[Resolved, Plan],
    config_dirs: list[str],
    from_stage: str | None,
    only: str | None,
    dry: bool,
    console: Console,
) -> tuple[str, str | None]:
    """Run one point; (status, error). Whatever ends it, its record leaves `running`: a refusal or
    an exception is `failed` (the sweep goes on), a signal `interrupted` (the sweep stops)."""
    from launch.run.pipeline import PipelineError
    from launch.run.rundir import RunDir, RunDirError

    resolved, plan = planned
    run_dir = RunDir(plan.run_dir)
    run_dir.path.mkdir(parents=True, exist_ok=True)
    summary.update(point.index, run_dir=str(run_dir.path), status="running")
    try:
        write_run_dir(run_dir, resolved, plan, config_dirs)
        result = execute(plan, run_dir, resolved, from_stage, only, dry=dry, console=console)
    except KeyboardInterrupt:
        summary.update(point.index, status="interrupted", error="stopped by a signal (Ctrl-C, SIGTERM)")
        raise
    except (PipelineError, RunDirError) as err:
        console.print(f"[red]point {point.index}:[/] {err}", soft_wrap=True, highlight=False)
        return "failed", str(err).splitlines()[0]
    except Exception as err:
        console.print_exception()
        return "failed", f"{type(err).__name__}: {err}"
    report_result(result, plan, run_dir, console, dry=dry)
    if result.status in ("succeeded", "planned"):
        return result.status, None
    outcome = result.results.get(result.failed_stage or "")
    return result.status, f"stage {result.failed_stage}: {outcome.message if outcome else ''}".strip()


def _tracked(point: Point, sweep_name: str) -> Point:
    from dataclasses import replace

    return replace(point, overrides=point.with_tracking(sweep_name))
