"""Whether a sweep's launcher is still there, and so what its `running` points really are.

`sweep.json` says what the launcher last wrote: a launcher killed by SIGKILL (or a lost node) leaves
its current point `running` there until the sweep is resumed. The launcher holds `<sweep dir>/.lock`
(an advisory flock, released by the OS when the process dies, however it dies) while it runs points;
a point recorded `running` or `waiting` while nobody holds that lock, and nobody holds its own run
dir's lock either (a parallel point's launcher may outlive the sweep's), was interrupted:
`interrupted (launcher gone)`. Light: `t3rl runs` reads it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from launch.files import LockHeld, exclusive_lock, is_locked
from launch.run.record_files import read_sweep

SWEEP_LOCK = ".lock"
LAUNCHER_GONE = "interrupted (launcher gone)"
# States a point has only while some launcher is working on it.
LIVE_STATES = frozenset({"running", "waiting"})


@contextmanager
def sweep_lock(sweep_dir: Path) -> Iterator[None]:
    """Held by the process running a sweep's points; a second launcher of the same sweep is refused."""
    sweep_dir.mkdir(parents=True, exist_ok=True)  # a search's dir is made as its first trial starts
    try:
        with exclusive_lock(sweep_dir / SWEEP_LOCK):
            yield
    except LockHeld as held:
        # lazy: the pipeline's modules, only when a sweep takes its lock
        from launch.run.pipeline import PipelineError

        launcher = ", pid ".join(filter(None, ("its sweep launcher", str(held.holder or ""))))
        raise PipelineError(f"{sweep_dir} is in use by another t3rl process ({launcher})") from None


def launcher_alive(sweep_dir: Path) -> bool:
    return is_locked(sweep_dir / SWEEP_LOCK)


def point_state(record: Mapping[str, Any], alive: bool) -> str:
    """A point's status as it is now: its recorded one, unless no launcher is left to make it true."""
    status = str(record.get("status") or "planned")
    if status not in LIVE_STATES or alive:
        return status
    run_dir = record.get("run_dir")
    if run_dir and is_locked(Path(run_dir) / ".lock"):
        return status  # the point's own launcher still runs it
    return LAUNCHER_GONE


def points_now(sweep_dir: Path) -> list[dict[str, Any]]:
    """The points of `<sweep_dir>/sweep.json`, each with its `status` as it is now."""
    data = read_sweep(sweep_dir)
    alive = launcher_alive(sweep_dir)
    return [{**record, "status": point_state(record, alive)} for record in data.get("points", [])]
