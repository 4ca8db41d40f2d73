"""A `-m` sweep: every point validated and planned before any starts, each in its own run dir.

Then the points run `executor.max_parallel` at a time. One at a time (local's default, and every
`t3rl plan -m`), each point runs here, in this process, its output on the terminal. More than one
(slurm and ray by default): each point is its own launcher process (`launch.run.parallel`), its
output in `<point>/launcher.log`, and one live table shows them all.

Whatever ends a point, its record leaves `running`: a refusal or an exception is `failed` with its
error (the sweep goes on), a signal `interrupted` (the sweep stops, and says how to resume it).
`t3rl run --run-dir <sweep dir>` resumes every point that has not succeeded.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from launch.checks.context import Selection
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import ConfigError, render_problems
from launch.files import is_locked
from launch.run.executors.ray_capacity import live_submission_ids, own_live_gpus, sweep_capacity
from launch.run.executors.ray_jobs import dashboard_address
from launch.run.exit_codes import EXIT_CONFIG, EXIT_FAILED, INTERRUPTED
from launch.run.override_merge import refuse_literals_for_children
from launch.run.parallel import PointJob, PointScheduler
from launch.run.pipeline import PipelineError
from launch.run.point_record import own_point
from launch.run.point_stale import changed_since, composed_point, not_composed
from launch.run.rundir import RunDir, RunDirError, now, stamp_now
from launch.run.single import in_recorded_working_dir
from launch.run.steps import (
    execute,
    new_sweep_dir,
    plan_run,
    report_result,
    resolve_overrides,
    t3rl_root,
    write_run_dir,
)
from launch.run.sweep import (
    IncompleteEval,
    Point,
    SweepSummary,
    check_points,
    expand_points,
    metric_label,
    point_metric,
    print_points_table,
)
from launch.run.sweep_checks import CheckedPoint, refuse_whole_sweep
from launch.run.sweep_extend import PATH_KINDS, extendable, renumbered
from launch.run.sweep_liveness import sweep_lock
from launch.run.sweep_plot import plot_sweep
from launch.run.sweep_selections import new_points_refused
from launch.run.sweep_view import live_points, points_table
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from launch.checks.resolve import Resolved
    from launch.plan.build import Plan
    from launch.run.parallel import PointProgress


@dataclass(frozen=True)
class PlannedPoint:
    """A validated, planned point: what runs it needs."""

    index: int
    label: str
    run_dir: RunDir
    resolved: Resolved
    plan: Plan
    config_dirs: list[str]


def run_sweep(
    overrides: list[str],
    config_dirs: list[str],
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console,
    max_points: int | None = None,
) -> int:
    points = expand_points(overrides, config_dirs, max_points)
    stamp = stamp_now()
    # The sweep dir follows from the first point's runs_dir (plans_dir when planning) and name;
    # check_points plans in order.
    sweep_dirs: list[Path] = []
    indexes = iter(range(len(points)))
    # The earlier sweep these points extend (more values in a swept list), found with the first point.
    extended: list[SweepSummary] = []
    path_keys: set[str] = set()  # the keys of the schema's local paths, read from the first point

    def planner(point_overrides: tuple[str, ...]) -> tuple[Resolved, Plan]:
        index = next(indexes)
        resolved = resolve_overrides(
            list(point_overrides), config_dirs, console, plans=dry, selection=Selection(from_stage, only)
        )
        if not sweep_dirs:
            parent = Path(resolved.run.paths.runs_dir).resolve() / resolved.run.name
            path_keys.update(key for kind in PATH_KINDS for key, _, _ in fields_of_kind(resolved.run, kind))
            earlier = None if dry else extendable(parent, points, config_dirs, path_keys)
            extended.extend([earlier] if earlier else [])
            sweep_dirs.append(earlier.sweep_dir if earlier else new_sweep_dir(resolved, stamp, plan=dry))
        return resolved, plan_run(resolved, RunDir(sweep_dirs[0] / f"p{index:02d}"))

    sweep_name = f"sweep-{stamp}"
    checks = check_points([p.tracked(sweep_name) for p in points], planner)
    new_points = points
    if extended:
        # Checked again under the sweep's own name and the indexes its points have (tracking names).
        points, new_points = renumbered(points, extended[0], path_keys)
        sweep_name, indexes = extended[0].name, iter([p.index for p in points])
        checks = check_points([p.tracked(sweep_name) for p in points], planner)
        console.print(
            f"extending {sweep_dirs[0]}: {len(points) - len(new_points)} point(s) from before (each "
            f"runs what changed since, if anything), {len(new_points)} new; for a new sweep instead, "
            "give another name= or move that dir away",
            soft_wrap=True,
            markup=False,
        )
    elif sweep_dirs and sweep_dirs[0].name != sweep_name:
        # `sweep-<stamp>` existed (another sweep of that second), so the dir got a suffix: the points'
        # tracking names are the dir's name, one name for the sweep wherever it shows (checked again
        # under it, as rare as two sweeps of one experiment started in one second).
        sweep_name, indexes = sweep_dirs[0].name, iter(range(len(points)))
        checks = check_points([p.tracked(sweep_name) for p in points], planner)
    print_points_table(checks, console)
    if not all(c.ok for c in checks):
        return EXIT_CONFIG

    refuse_whole_sweep([CheckedPoint(c.point, *c.plan) for c in checks], overrides, only, console)
    # every new point a new record: a selection none of its stages can feed is refused before any runs
    unfed = new_points_refused(
        [(c.point, c.plan[1]) for c in checks], Selection(from_stage, only), {p.index for p in new_points}
    )
    if unfed:
        raise ConfigError(unfed)
    first_resolved, first_plan = checks[0].plan
    if not dry and len(points) > 1 and getattr(first_resolved.run.executor, "max_parallel", 1) != 1:
        refuse_literals_for_children(list(dict.fromkeys(o for c in checks for o in c.plan[0].overrides)))
    summary = (
        extended[0]
        if extended
        else SweepSummary(
            record="plan" if dry else "run",
            sweep_dir=sweep_dirs[0],
            name=sweep_name,
            metric_name=metric_label(first_plan.stages, first_resolved.run.objective),
        )
    )
    planned = []
    for check, point in zip(checks, points, strict=True):
        resolved, plan = check.plan
        planned.append(
            PlannedPoint(
                point.index, " ".join(point.varying), RunDir(plan.run_dir), resolved, plan, config_dirs
            )
        )
    summary.plan(new_points, {item.index: str(item.run_dir.path) for item in planned})
    return run_points(planned, summary, from_stage, only, dry=dry, console=console)


def resume_sweep(sweep_dir: Path, from_stage: str | None, only: str | None, console: Console) -> int:
    """`t3rl run --run-dir <sweep dir>`: every point that has not succeeded runs again in its own run
    dir, with its own overrides (re-attaching to jobs still running), and so does a succeeded point that
    a resume of it alone would not leave as it is (a stage whose command, env or config changed since
    it ran: the pipeline's own decision, `changed_since`); the others stay as they are unless
    --from/--only asks for a stage of every point."""
    sweep_dir = Path(os.path.abspath(sweep_dir))  # the points compose in the dir the sweep was started in
    summary = SweepSummary.load(sweep_dir)
    if summary.search is not None:
        raise PipelineError(search_not_resumed(sweep_dir, summary.search))
    planned = []
    corrected = False
    for index in sorted(summary.points):
        record = summary.points[index]
        # Whether the point succeeded is its own record's word: sweep.json only indexes it.
        own, note = own_point(asdict(record), summary.metric_name)
        if note is not None:
            console.print(note, soft_wrap=True, markup=False)
            # Written with the points' first update, under the sweep's lock (or below, when none runs).
            record.status, record.metric, record.error = own["status"], own["metric"], own["error"]
            corrected = True
        if record.run_dir is None:
            continue
        run_dir = RunDir(Path(record.run_dir))
        label = f"point {index} ({' '.join(record.varying)})"
        kept = record.status == "succeeded" and from_stage is None and only is None
        # The sweep says so since it records it; a point's manifest says so for sweeps planned before.
        if summary.record == "plan" or run_dir.is_plan():
            raise PipelineError(
                f"{sweep_dir} was planned by `t3rl plan -m`, not run: start the sweep with "
                "`t3rl run -m` and the same overrides (its record goes under paths.runs_dir)"
            )
        # A point whose run dir is gone (deleted by hand, a cleanup) is what the sweep's record says it
        # is: its overrides there, started where and with the config dirs its sibling points were.
        gone = not run_dir.path.exists()
        manifest = _sibling_manifest(summary, sweep_dir) if gone else run_dir.read_manifest()
        in_recorded_working_dir(run_dir, manifest, console)
        config_dirs = list(manifest.get("config_dirs", []))
        stored = list(Point(index, tuple(record.overrides), ()).with_tracking(summary.name)) if gone else None
        try:
            # A kept point's warnings are said only if it runs: a resume that runs nothing says nothing.
            resolved, plan = composed_point(
                run_dir, config_dirs, Console(file=io.StringIO()) if kept else console, stored
            )
        except ConfigError as err:
            if not kept:
                raise
            # Kept, as before it was checked: what it recorded is intact, only its staleness is unknown.
            console.print(
                f"{label}: succeeded, kept; whether a stage of it changed since is not known: "
                f"{not_composed(err)}",
                soft_wrap=True,
                markup=False,
            )
            continue
        if kept:
            stale = changed_since(plan, run_dir)
            if stale is None:
                continue
            console.print(
                f"{label}: its record says succeeded, but {stale} (a resume of the sweep runs it, as "
                f"`t3rl run --run-dir {run_dir.path}` would)",
                soft_wrap=True,
                markup=False,
            )
            render_problems(resolved.warnings, console)
        planned.append(PlannedPoint(index, " ".join(record.varying), run_dir, resolved, plan, config_dirs))
    if not planned:
        if corrected:
            with sweep_lock(sweep_dir):
                summary.write()
        console.print(
            f"every point of {sweep_dir} succeeded; nothing to resume", soft_wrap=True, markup=False
        )
        return 0
    console.print(f"resuming {len(planned)} point(s) of [bold]{escape(str(sweep_dir))}[/]", soft_wrap=True)
    return run_points(planned, summary, from_stage, only, dry=False, console=console)


def _sibling_manifest(summary: SweepSummary, sweep_dir: Path) -> dict[str, Any]:
    """The manifest of a point of the sweep whose run dir is left: where the sweep was started and its
    config dirs, which its points share."""
    for record in summary.points.values():
        if record.run_dir is not None and (Path(record.run_dir) / "manifest.json").is_file():
            return RunDir(Path(record.run_dir)).read_manifest()
    raise PipelineError(
        f"no point of {sweep_dir} has its run dir left: its record cannot say where the sweep was started "
        "nor with which --config-dir; start the sweep again with the `t3rl run -m` line that started it"
    )


def search_not_resumed(sweep_dir: Path, overrides: list[str]) -> str:
    """Why an Optuna search's dir is not resumed trial by trial, and what to run instead."""
    return (
        f"{sweep_dir} is an Optuna search: its study chose each trial from the results before it, and a "
        "trial run again here would reach neither the study nor its best (optimization_results.yaml). "
        f"Start the search again: t3rl run -m {shlex.join(overrides)} (with hydra.sweeper.storage="
        "sqlite:///<file> and the same study_name, a search started again continues its study)"
    )


def run_points(
    planned: list[PlannedPoint],
    summary: SweepSummary,
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console,
) -> int:
    """Run the points (see the module docstring); 0 when every one succeeded (or was planned)."""
    max_parallel = getattr(planned[0].resolved.run.executor, "max_parallel", 1)
    try:
        # Held while the points run: `t3rl runs` tells a dead launcher's `running` points by it.
        with nullcontext() if dry else sweep_lock(summary.sweep_dir):
            if dry or max_parallel == 1 or len(planned) == 1:
                statuses = _one_at_a_time(planned, summary, from_stage, only, dry, console)
            else:
                statuses = at_once(planned, summary, max_parallel, from_stage, only, console)
    except KeyboardInterrupt:
        if not dry:
            console.print(
                f"resume the sweep with: t3rl run --run-dir {shlex.quote(str(summary.sweep_dir))}",
                soft_wrap=True,
                markup=False,
            )
        raise
    ok = sum(status in ("succeeded", "planned") for status in statuses)
    if not dry and plot_sweep(summary) is not None:
        summary.write()  # sweep.md now links the plot
    console.print(
        f"sweep: {summary.sweep_dir / 'sweep.md'} ({ok}/{len(statuses)} ok)", soft_wrap=True, markup=False
    )
    if ok < len(statuses):
        console.print(
            f"resume the rest with: t3rl run --run-dir {shlex.quote(str(summary.sweep_dir))}",
            soft_wrap=True,
            markup=False,
        )
        return EXIT_FAILED
    return 0


def _one_at_a_time(
    planned: list[PlannedPoint],
    summary: SweepSummary,
    from_stage: str | None,
    only: str | None,
    dry: bool,
    console: Console,
) -> list[str]:
    statuses = []
    for item in planned:
        console.rule(f"point {item.index}: {item.label}")
        summary.update(item.index, started_at=now(), finished_at=None, error=None)
        status, error = _run_point(summary, item, from_stage, only, dry, console)
        metric = None
        if status == "succeeded":
            status, metric, error = _scored(item, error)
        summary.update(item.index, status=status, metric=metric, error=error, finished_at=now())
        statuses.append(status)
    return statuses


def _run_point(
    summary: SweepSummary,
    item: PlannedPoint,
    from_stage: str | None,
    only: str | None,
    dry: bool,
    console: Console,
) -> tuple[str, str | None]:
    """Run one point here; (status, error). A signal marks it interrupted and propagates."""
    run_dir = item.run_dir
    run_dir.path.mkdir(parents=True, exist_ok=True)
    summary.update(item.index, run_dir=str(run_dir.path), status="running")

    def record() -> None:  # under the point's lock: a dir another launcher holds keeps its own record
        write_run_dir(run_dir, item.resolved, item.plan, item.config_dirs, record="plan" if dry else "run")

    try:
        result = execute(
            item.plan, run_dir, item.resolved, from_stage, only, dry=dry, console=console, record=record
        )
    except KeyboardInterrupt:
        summary.update(item.index, status="interrupted", error=INTERRUPTED)
        raise
    except (PipelineError, RunDirError) as err:
        console.print(f"[red]point {item.index}:[/] {escape(str(err))}", soft_wrap=True, highlight=False)
        return "failed", _one_line(str(err))
    except Exception as err:
        console.print_exception()
        return "failed", f"{type(err).__name__}: {err}"
    report_result(result, item.plan, run_dir, console, dry=dry)
    if result.status in ("succeeded", "planned"):
        return result.status, None
    outcome = result.results.get(result.failed_stage or "")
    return result.status, f"stage {result.failed_stage}: {outcome.message if outcome else ''}".strip()


def _scored(item: PlannedPoint, error: str | None) -> tuple[str, float | None, str | None]:
    """A succeeded point's metric; a metric that cannot be read (or comes from an incomplete eval)
    fails the point."""
    try:
        return "succeeded", point_metric(item.plan.stages, item.resolved.run.objective), error
    except (IncompleteEval, OSError, ValueError, KeyError) as err:
        return "failed", None, f"no metric: {err}"


def at_once(
    planned: list[PlannedPoint],
    summary: SweepSummary,
    max_parallel: int | None,
    from_stage: str | None,
    only: str | None,
    console: Console,
) -> list[str]:
    """Each point as its own launcher process, within max_parallel and the cluster's GPUs (also the
    trials of an Optuna batch); their statuses, in index order, and the summary updated."""
    flags = [*(["--from", from_stage] if from_stage else []), *(["--only", only] if only else [])]
    jobs, statuses = [], {}
    for item in planned:
        try:
            item.run_dir.path.mkdir(parents=True, exist_ok=True)
            # The child launcher (`t3rl run --run-dir`) records the attempt; a point another launcher
            # still holds keeps that launcher's record (the point waits for it, then resumes from it).
            if not is_locked(item.run_dir.path / ".lock"):
                write_run_dir(item.run_dir, item.resolved, item.plan, item.config_dirs, attempt=False)
        except OSError as err:
            statuses[item.index] = "failed"
            summary.update(item.index, status="failed", error=f"cannot write the run dir: {err}")
            continue
        argv = (sys.executable, "-m", "launch", "run", "--run-dir", str(item.run_dir.path), *flags)
        gpus = max((stage.gpus for stage in item.plan.stages), default=0)
        jobs.append(PointJob(item.index, item.run_dir.path, argv, gpus, item.run_dir.path / "launcher.log"))
    labels = {item.index: item.label for item in planned}
    by_index = {item.index: item for item in planned}
    metric_name = summary.metric_name or "metric"
    seen: dict[int, tuple[str, str, str]] = {}
    # Each point's metric as soon as it succeeds, for the live table (the summary's come below).
    live_metrics: dict[int, float | None] = {}

    def record(progress: dict[int, PointProgress], show: Callable[[Any], None]) -> None:
        for index, point in progress.items():
            key, before = (point.status, point.stage, point.job), seen.get(index, ("", "", ""))
            if before == key:
                continue
            seen[index] = key
            changes: dict[str, Any] = {"status": point.status, "stage": point.stage or None}
            if point.job:
                changes["job"] = point.job
            if point.status == "running" and before[0] != "running":
                changes |= {"started_at": now(), "finished_at": None, "error": None}
            if point.ended is not None:
                changes |= {"finished_at": now(), "error": point.error}
            if point.status == "succeeded":
                live_metrics[index] = _scored(by_index[index], None)[1]
            summary.update(index, **changes)
        show(progress)

    at_once = f"{max_parallel} at a time" if max_parallel else "all at once"
    title = f"{summary.name}: {counted(len(jobs), 'point')}, {at_once}"
    scheduler = PointScheduler(
        jobs,
        max_parallel=max_parallel,
        gpu_capacity=_gpu_capacity(planned[0].resolved, jobs, console),
        env=_child_env(),
    )
    with live_points(console, title, labels, metric_name, live_metrics) as show:
        scheduler.on_change = lambda progress: record(progress, show)
        progress = scheduler.run()
    metrics: dict[int, float | None] = {}
    for item in planned:
        if item.index not in progress:
            continue
        status = progress[item.index].status
        if status == "succeeded":
            status, metrics[item.index], error = _scored(item, None)
            summary.update(item.index, status=status, metric=metrics[item.index], error=error)
            progress[item.index].status, progress[item.index].error = status, error
        statuses[item.index] = status
    console.print(points_table(title, labels, progress, metrics, metric_name))
    return [statuses[index] for index in sorted(statuses)]


def _gpu_capacity(resolved: Resolved, jobs: list[PointJob], console: Console) -> int | None:
    """Ray: the cluster's free GPUs (points wait here for room rather than as pending jobs), counting
    those the sweep's own re-attached points hold as theirs; other executors: no cap."""
    executor = resolved.run.executor
    if executor.kind != "ray":
        return None

    address = dashboard_address(executor)
    own = own_live_gpus([(job.run_dir, job.gpus) for job in jobs], lambda: live_submission_ids(address))
    capacity = sweep_capacity(address, own)
    console.print(f"Ray cluster {address}: {capacity.note}", highlight=False, soft_wrap=True)
    return capacity.gpus


def _child_env() -> dict[str, str]:
    """This environment with the t3rl checkout first on PYTHONPATH (the points run this very code)."""
    root = str(t3rl_root())
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([root, path]) if path else root}


def _one_line(message: str) -> str:
    """A multi-line refusal as one table cell: its headline, its first item, how many more."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if len(lines) == 1:
        return lines[0]
    items = [line for line in lines[1:] if not line.startswith("(")]
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return f"{lines[0].rstrip(':')}: {items[0]}{more}" if items else lines[0]
