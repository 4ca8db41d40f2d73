"""A sweep run again with more values in its swept lists extends the sweep it grew from.

`t3rl run -m +experiment=X reward=progress,binary`, then `… reward=progress,binary,shaped`: the second
command runs the new point only, in the first sweep's dir, and its table, sweep.md and sweep.png hold
all three points, compared as one sweep. The earlier points run again through their own pipelines,
where an unchanged point is cached stage by stage (nothing runs) and a point whose config or code
changed since reruns what changed: a point's result is never kept from a config that is not the
command's. A sweep is extended when every point it has is a point of the new command (the same
overrides, the same config dirs) and the new command has more; the newest such sweep under
`<runs_dir>/<name>/` is taken. The same command again (no new point) starts a new sweep as before;
so does one another launcher is running, a planned one (`t3rl plan -m`), or an Optuna search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from launch.run.record_files import RunDirError
from launch.run.rundir import RunDir
from launch.run.sweep import Point, SweepSummary
from launch.run.sweep_liveness import launcher_alive


def _dirs(config_dirs: Sequence[str], working_dir: str | Path) -> list[str]:
    return [str((Path(working_dir) / d).resolve()) for d in config_dirs]


def extendable(parent: Path, points: Sequence[Point], config_dirs: Sequence[str]) -> SweepSummary | None:
    """The newest sweep under `parent` that `points` extend (its record loaded), or None."""
    wanted = {frozenset(p.overrides) for p in points}
    mine = _dirs(config_dirs, Path.cwd())
    candidates = sorted(parent.glob("sweep-*/sweep.json"), key=lambda f: f.stat().st_mtime, reverse=True)
    for record in candidates:
        try:
            summary = SweepSummary.load(record.parent)
        except (RunDirError, OSError, KeyError, ValueError):
            continue
        have = {frozenset(r.overrides) for r in summary.points.values()}
        if summary.record != "run" or summary.search is not None or not have or not have < wanted:
            continue
        if launcher_alive(summary.sweep_dir) or not _same_config_dirs(summary, mine):
            continue
        return summary
    return None


def _same_config_dirs(summary: SweepSummary, mine: list[str]) -> bool:
    """Every earlier point was composed from the config dirs given now."""
    for point in summary.points.values():
        if point.run_dir is None:
            return False
        try:
            manifest = RunDir(Path(point.run_dir)).read_manifest()
        except (RunDirError, OSError):
            return False
        stored = manifest.get("config_dirs") or []
        if _dirs(stored, manifest.get("working_dir") or Path.cwd()) != mine:
            return False
    return True


def renumbered(points: Sequence[Point], earlier: SweepSummary) -> tuple[list[Point], list[Point]]:
    """`points` with the earlier sweep's index for each point it has and the next free ones for the
    rest (in the command's order); and the new ones alone."""
    known = {frozenset(r.overrides): r.index for r in earlier.points.values()}
    following = max(earlier.points) + 1
    every, new = [], []
    for point in points:
        index = known.get(frozenset(point.overrides))
        if index is None:
            index, following = following, following + 1
            new.append(replace(point, index=index))
        every.append(replace(point, index=index))
    return every, new
