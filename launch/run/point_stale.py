"""Whether a sweep point that succeeded is stale: a stage of it that a resume of it alone would run
again (its command, env or config changed since it ran: t3rl's code, a config file, an environment
variable it reads). The decision is the pipeline's own (`launch.run.pipeline.decide`, read without
writing by `preview`) on the point's config composed as a resume of it composes it; a sweep's resume
runs such a point again (launch.run.sweep_runs), and every listing of a sweep's points says so of each
point that succeeded (`stale_points`: `t3rl runs show <sweep dir>`, a search's trial table)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from launch.config.errors import ConfigError
from launch.run.override_merge import refuse_masked
from launch.run.pipeline import PipelineError, changes, preview
from launch.run.record_files import RunDirError
from launch.run.rundir import RunDir, started_in
from launch.run.steps import plan_run, resolve_overrides
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from launch.checks.resolve import Resolved
    from launch.output.plain import PlainConsole
    from launch.plan.build import Plan


def composed_point(
    run_dir: RunDir,
    config_dirs: list[str],
    console: Console | PlainConsole,
    stored: list[str] | None = None,
) -> tuple[Resolved, Plan]:
    """A point's config and plan as a resume of it composes them: with the overrides it ran with (in
    the current dir: the caller moves to the one it was started in), or `stored` for a point whose run
    dir is gone (the sweep's record of it)."""
    stored = run_dir.read_overrides() if stored is None else stored
    # A point cannot be given an override here: one whose credential was stored masked resumes alone.
    refuse_masked(stored, run_dir.path, f"t3rl run --run-dir {run_dir.path}")
    resolved = resolve_overrides(stored, config_dirs, console, None, run_dir.path)  # it writes only there
    return resolved, plan_run(resolved, run_dir)


def changed_since(plan: Plan, run_dir: RunDir) -> str | None:
    """What a resume of the point alone would change, in one line: the pipeline's own decision, read
    without writing (launch.run.pipeline.preview); None when it would change nothing."""
    changed = changes(preview(plan, run_dir).decisions)
    if not changed:
        return None
    first, more = changed[0], len(changed) - 1
    later = f", and {counted(more, 'later stage')} with it" if more else ""
    return f"stage {first.stage} is stale ({first.reason}){later}"


def not_composed(err: ConfigError) -> str:
    """Why a point's config cannot be composed to check it, in one line."""
    first = err.problems[0]
    more = f" (+{len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
    return f"its config cannot be composed here: {first.key}: {first.message}{more}"


@dataclass(frozen=True)
class Stale:
    """What a listing says of a point that succeeded: the line, and whether a resume runs it again (a
    point whose config cannot be composed here is kept by a resume: only its staleness is unknown)."""

    line: str
    runs_again: bool


def staleness(run_dir: Path) -> Stale | None:
    """What a resume of the point `run_dir` alone would run again (`changed_since`), its config composed as
    that resume composes it, in the dir it was started in; None when nothing."""
    point = RunDir(run_dir)
    try:
        manifest = point.read_manifest()
        with contextlib.chdir(started_in(manifest).resolve_in or "."):  # there, as a resume resolves them
            # The composition's warnings are the run's, not the listing's.
            _, plan = composed_point(
                point, list(manifest.get("config_dirs", [])), Console(file=io.StringIO())
            )
            changed = changed_since(plan, point)
            return None if changed is None else Stale(changed, runs_again=True)
    except ConfigError as err:
        return Stale(f"not checked for stale stages: {not_composed(err)}", runs_again=False)
    except (RunDirError, PipelineError) as err:
        return Stale(f"not checked for stale stages: {str(err).splitlines()[0]}", runs_again=False)


def stale_points(points: Iterable[Mapping[str, Any]]) -> dict[int, Stale]:
    """By index, what every listing of a sweep's points says of each point that succeeded (as its own
    record says: launch.run.point_record.own_point) and is stale, or not checked: each such point's number
    came from stages a resume would run again, not only the best one's."""
    found = {}
    for point in points:
        if point.get("status") == "succeeded" and point.get("run_dir"):
            stale = staleness(Path(point["run_dir"]))
            if stale is not None:
                found[point["index"]] = stale
    return found
