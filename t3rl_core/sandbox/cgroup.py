"""A pids cgroup per sandbox slot (one cell at a time): a process limit per cell.

RLIMIT_NPROC never applies to uid 0 and counts every process of a uid across all cells at once, so
the pids controller is what bounds one cell's processes. Works where this process may create cgroups
below its own one in a hierarchy with the pids controller (cgroup v1 `pids`, or v2 with `pids`
enabled for children); elsewhere `PidsCgroups.open()` returns None and the caller falls back to
RLIMIT_NPROC.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
import weakref
from pathlib import Path

_instances = itertools.count()


def _own_pids_cgroup() -> Path | None:
    """The directory of this process's cgroup in a hierarchy that has the pids controller."""
    mounts: dict[str, Path] = {}  # "pids" (v1) or "" (v2) → mount point
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _, options = right.split()[:3]
            if fstype == "cgroup" and "pids" in options.split(","):
                mounts["pids"] = Path(left.split()[4])
            elif fstype == "cgroup2":
                mounts.setdefault("", Path(left.split()[4]))
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            key = "pids" if "pids" in controllers.split(",") else controllers
            if key in mounts and key in ("pids", ""):
                return mounts[key] / path.lstrip("/")
    return None


class PidsCgroups:
    """A parent cgroup owned by this sandbox; one child with `pids.max` per slot (one cell at a time)."""

    def __init__(self, parent: Path) -> None:
        self.parent = parent
        self._ids = itertools.count()
        self._finalizer = weakref.finalize(self, _remove_tree, parent)

    @classmethod
    def open(cls) -> PidsCgroups | None:
        try:
            own = _own_pids_cgroup()
            if own is None:
                return None
            parent = own / f"t3rl-sandbox-{os.getpid()}-{next(_instances)}"
            parent.mkdir()
        except OSError:
            return None
        cgroups = cls(parent)
        try:
            probe = cgroups.create(1)
            cgroups.remove(probe)
        except OSError:
            _remove_tree(parent)
            return None
        return cgroups

    def create(self, max_processes: int) -> Path:
        """A fresh child cgroup limited to `max_processes` tasks; returns its directory."""
        path = self.parent / f"cell-{next(self._ids)}"
        path.mkdir()
        try:
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            path.rmdir()
            raise
        return path

    def remove(self, path: Path) -> None:
        """Kill whatever is left in the cgroup, then delete it."""
        _remove_tree(path)

    def close(self) -> None:
        self._finalizer()


def _remove_tree(path: Path) -> None:
    """Kill the tasks of a cgroup (and its children) and remove the directories, retrying briefly."""
    if not path.is_dir():
        return
    for child in [p for p in path.iterdir() if p.is_dir()]:
        _remove_tree(child)
    for _ in range(50):
        with contextlib.suppress(OSError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
