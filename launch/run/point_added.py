"""A sweep point's record holds the overrides its sweep added (its tracking names) beside those it was
given: a resume of the point (the sweep's, or of the point alone) judges them as the sweep's, as the sweep
did when it first resolved the point. Read as typed, each resume warned `tracking.group is set, but
tracking.kind is none`, with `~tracking.group` as the fix, about names the user never typed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from launch.checks.rules.unread import ADDED_BY_LAUNCHER
from launch.run.record_files import RunDirError, read_sweep


def sweep_added(run_dir: Path, stored: Sequence[str]) -> frozenset[str]:
    """Those of `stored` (a run dir's overrides) that its sweep added, by the declaration that added them
    (`launch.run.sweep.Point.tracking`); none for a run dir that is no sweep's point."""
    from launch.run.sweep import Point  # lazy: the sweep modules, only for a sweep's point

    here = run_dir.resolve()
    if not (here.parent / "sweep.json").is_file():
        return frozenset()
    try:
        sweep = read_sweep(here.parent)
    except (RunDirError, OSError):  # a sweep.json that says nothing readable: no names are its own
        return frozenset()
    for record in sweep["points"]:
        if isinstance(record.get("run_dir"), str) and Path(record["run_dir"]).resolve() == here:
            point = Point(record["index"], tuple(record.get("overrides") or ()), ())
            return frozenset(point.tracking(sweep["name"])) & frozenset(stored)
    return frozenset()


@contextlib.contextmanager
def judged_as_the_sweeps(run_dir: Path | None, stored: Sequence[str]) -> Iterator[None]:
    """While the overrides of `run_dir` (a resumed record) are resolved: its sweep's own are not typed."""
    added = sweep_added(run_dir, stored) if run_dir is not None else frozenset()
    token = ADDED_BY_LAUNCHER.set(ADDED_BY_LAUNCHER.get() | added)
    try:
        yield
    finally:
        ADDED_BY_LAUNCHER.reset(token)
