"""A pids cgroup per cell: the process limit that also holds for root, where RLIMIT_NPROC does not.

The kernel never applies RLIMIT_NPROC to uid 0, so a root sandbox (the usual container) needs the
pids controller to stop a fork bomb. Works where this process may create cgroups below its own one
in a hierarchy with the pids controller (cgroup v1 `pids`, or v2 with `pids` enabled for children);
elsewhere `PidsCgroups.open()` returns None and the caller falls back to RLIMIT_NPROC.
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
    """A parent cgroup owned by this sandbox; one child with `pids.max` per running cell.

    Children are reused: creating and removing a cgroup costs milliseconds of kernel work per cell
    (removal also waits for the cell's last processes), reading an empty `cgroup.procs` does not.
    """

    def __init__(self, parent: Path) -> None:
        self.parent = parent
        self._ids = itertools.count()
        # Empty children ready for a cell, and released ones that still held processes (killed).
        self._free: list[Path] = []
        self._draining: list[Path] = []
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

    def acquire(self, max_processes: int) -> Path:
        """An empty child cgroup limited to `max_processes` tasks (reused when one is free)."""
        still = []
        for path in self._draining:
            (self._free if not _tasks(path) else still).append(path)
        self._draining = still
        while self._free:
            path = self._free.pop()
            try:
                (path / "pids.max").write_text(str(max_processes))
                return path
            except OSError:
                _remove_tree(path)
        return self.create(max_processes)

    def release(self, path: Path) -> None:
        """Back to the pool once empty; what the cell left running is killed first."""
        try:
            left = _tasks(path)
        except OSError:
            _remove_tree(path)
            return
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        (self._draining if left else self._free).append(path)

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
        """Kill whatever is left in the cell's cgroup, then delete it."""
        _remove_tree(path)

    def close(self) -> None:
        self._finalizer()


def _tasks(path: Path) -> list[int]:
    return [int(pid) for pid in (path / "cgroup.procs").read_text().split()]


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
