"""An Optuna search (`hparams_search=<name>`): each trial a full run; the `hydra.sweeper.n_jobs` trials
of a batch run at once (each its own launcher process, as the points of a parallel sweep), a batch of
one here, in this process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from launch.config.errors import ConfigError, Problem
from launch.run.exit_codes import EXIT_FAILED
from launch.run.pipeline import PipelineError
from launch.run.point_record import own_point
from launch.run.point_stale import stale_points
from launch.run.record_files import read_sweep
from launch.run.rundir import RunDir, RunDirError, stamp_now
from launch.run.search import NoTrialScored, TrialFailed, TrialOutcome, run_search, storage_problem
from launch.run.steps import execute, new_sweep_dir, plan_run, resolve_overrides, write_run_dir
from launch.run.sweep import IncompleteEval, SweepSummary, point_metric, resolving
from launch.run.sweep_checks import search_base, search_problems
from launch.run.sweep_liveness import sweep_lock
from launch.run.sweep_runs import PlannedPoint, at_once

if TYPE_CHECKING:
    from rich.console import Console

    from launch.run.sweep import Point


def run_search_trials(overrides: list[str], config_dirs: list[str], console: Console, *, dry: bool) -> int:
    """An Optuna search (hparams_search=<name>): each trial is a full run; its metric feeds the study."""
    if dry:
        problem = Problem(
            "hparams_search",
            "a search picks its points as it goes: there is nothing to plan ahead",
            fix="plan one trial by giving its values as plain overrides",
        )
        raise ConfigError([problem])

    stamp = stamp_now()
    first = resolve_overrides(search_base(overrides, config_dirs), config_dirs, console)
    problem = storage_problem(first.hydra.get("sweeper") or {})
    if problem is not None:
        raise ConfigError([problem])
    # The space at each bound and choice, and the trials of a batch together, before the study starts.
    problems = search_problems(overrides, first, config_dirs)
    if problems:
        raise ConfigError(problems)
    sweep_dir = new_sweep_dir(first, stamp)
    objective = first.run.objective
    metric_name = objective.metric if objective else None

    def plan_trial(point: Point) -> PlannedPoint | TrialOutcome:
        run_dir = RunDir(sweep_dir / f"p{point.index:02d}")
        try:
            tracked = point.tracked(sweep_dir.name)
            with resolving(tracked):
                resolved = resolve_overrides(list(tracked.overrides), config_dirs, console)
            plan = plan_run(resolved, run_dir)
        except ConfigError as error:
            return TrialOutcome(None, "failed", None, str(error))
        return PlannedPoint(point.index, " ".join(point.varying), run_dir, resolved, plan, config_dirs)

    def run_one(item: PlannedPoint) -> TrialOutcome:
        try:
            item.run_dir.path.mkdir(parents=True, exist_ok=True)  # its lock is taken there
            result = execute(
                item.plan,
                item.run_dir,
                item.resolved,
                None,
                None,
                dry=False,
                console=console,
                # Under the trial's lock, as every run's record.
                record=lambda: write_run_dir(item.run_dir, item.resolved, item.plan, config_dirs),
            )
        except (PipelineError, RunDirError) as error:  # refused at pre-flight: a failed trial
            console.print(
                f"[red]trial {item.index}:[/] {escape(str(error))}", soft_wrap=True, highlight=False
            )
            return TrialOutcome(str(item.run_dir.path), "failed", None, str(error).splitlines()[0])
        if result.status != "succeeded":
            return TrialOutcome(str(item.run_dir.path), result.status, None, result.failed_stage)
        try:
            metric = point_metric(item.plan.stages, objective)
        except IncompleteEval as error:
            return TrialOutcome(str(item.run_dir.path), "failed", None, str(error))
        return TrialOutcome(
            str(item.run_dir.path), "succeeded", metric, None if metric is not None else "no eval summary"
        )

    def run_trials(points: Sequence[Point], summary: SweepSummary) -> list[TrialOutcome]:
        planned = {point.index: plan_trial(point) for point in points}
        ready = [item for item in planned.values() if isinstance(item, PlannedPoint)]
        if len(points) == 1 and ready:
            return [run_one(ready[0])]
        if ready:
            at_once(ready, summary, None, None, None, console)
        outcomes = []
        for point in points:
            item = planned[point.index]
            if not isinstance(item, PlannedPoint):
                outcomes.append(item)
                continue
            record = summary.points[point.index]
            outcomes.append(TrialOutcome(str(item.run_dir.path), record.status, record.metric, record.error))
        return outcomes

    # The record first (the sweep dir appears with it), then the launcher's lock inside.
    SweepSummary(sweep_dir=sweep_dir, name=sweep_dir.name, metric_name=metric_name, search=overrides).write()
    try:
        with sweep_lock(sweep_dir):
            results = run_search(
                overrides,
                sweep_dir=sweep_dir,
                name=sweep_dir.name,
                run_trials=run_trials,
                config_dirs=config_dirs,
                metric_name=metric_name,
            )
    except NoTrialScored as error:
        _print_trials(sweep_dir, console)
        console.print(
            f"[red]search ended without a result:[/] {escape(str(error))}; each trial's reason is in the "
            "table above",
            soft_wrap=True,
            highlight=False,
        )
        return EXIT_FAILED
    except TrialFailed as error:
        _print_trials(sweep_dir, console)
        console.print(
            f"[red]search stopped:[/] {escape(str(error))} (more failed trials than "
            "hydra.sweeper.max_failure_rate allows)",
            soft_wrap=True,
            highlight=False,
        )
        return EXIT_FAILED
    _print_trials(sweep_dir, console)
    console.print(
        f"search done: {sweep_dir} best {results.get('best_params')} = {results.get('best_value')}",
        markup=False,
        soft_wrap=True,  # one line whatever the path's length: read and copied whole
    )
    return 0


def _print_trials(sweep_dir: Path, console: Console) -> None:
    """Every trial of the study so far: its values, status, metric (or why it has none) and run dir."""
    data = read_sweep(sweep_dir)  # as every reader of a sweep reads it: its points where they are now
    metric = str(data.get("metric") or "metric")
    table = Table(title=f"{data['name']}: {len(data['points'])} trial(s)", title_justify="left")
    for column in ("#", "values", "status", metric, "started", "finished"):
        table.add_column(column, overflow="fold")
    points = [own_point(recorded, data.get("metric"))[0] for recorded in data["points"]]  # as own records say
    stale = stale_points(points)  # a trial run early in a long search may be stale by its end
    for point in points:
        value = point.get("metric")
        status = point["status"] + (f": {point['error']}" if point.get("error") else "")
        if point["index"] in stale:
            status += f"; {stale[point['index']].line}"
        table.add_row(
            str(point["index"]),
            escape(" ".join(point["varying"])),
            escape(status),
            "" if value is None else f"{value:.4g}",
            str(point.get("started_at") or "")[11:19],
            str(point.get("finished_at") or "")[11:19],
        )
    console.print(table)
    results = sweep_dir / "optimization_results.yaml"  # Optuna's best: none when no trial was scored
    console.print(
        f"study: {sweep_dir / 'sweep.md'}" + (f", {results}" if results.exists() else ""), soft_wrap=True
    )
