"""A cgroup per sandbox slot (one cell at a time): a process limit, a memory limit and a CPU share
per cell.

RLIMIT_NPROC never applies to uid 0 and counts every process of a uid across all cells at once, so
the pids controller is what bounds one cell's processes. RLIMIT_AS bounds one process's address space
but not memory a cell holds outside it (memfd, SysV and POSIX shared memory, files on tmpfs, many
processes at once): the memory controller counts all of it. The CPU scheduler weighs every thread
on its own: a cell's 32 busy threads would outweigh t3rl's trainer and rollout 32 to 1; in a cpu
cgroup all cells together weigh as many processes as may run at once, and a quota per slot caps the
CPUs one cell uses. Each controller is used where this
process may create cgroups below its own one in a hierarchy that has it (cgroup v1 `pids` / `memory`,
or v2 with the controller available to children); `CellCgroups.open()` returns None when neither is,
and the caller falls back to RLIMIT_NPROC, to refusing the calls that make unaccounted memory, and to
running cells at a lower priority (`CELL_NICE`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

_instances = itertools.count()
CONTROLLERS = ("pids", "memory", "cpu")
# Nice-0 process weight in each interface (cgroup v1 cpu.shares, v2 cpu.weight), and the v1 maximum.
_V1_SHARES, _V2_WEIGHT, _V1_SHARES_MAX, _V2_WEIGHT_MAX = 1024, 100, 262144, 10000
CPU_PERIOD_US = 100_000


def _own_cgroups() -> tuple[dict[str, Path], Path | None]:
    """This process's cgroup directory in each v1 hierarchy of a wanted controller, and in v2."""
    v1_mounts: dict[str, Path] = {}
    v2_mount = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _, options = right.split()[:3]
            point = Path(left.split()[4])
            if fstype == "cgroup":
                for controller in set(options.split(",")) & set(CONTROLLERS):
                    v1_mounts[controller] = point
            elif fstype == "cgroup2" and v2_mount is None:
                v2_mount = point
    v1: dict[str, Path] = {}
    v2 = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in set(controllers.split(",")) & set(v1_mounts):
                v1[controller] = v1_mounts[controller] / path.lstrip("/")
            if controllers == "" and v2_mount is not None:
                v2 = v2_mount / path.lstrip("/")
    return v1, v2


@dataclass
class SlotCgroup:
    """One slot's cgroups: one directory per hierarchy, which the slot's zygote joins."""

    dirs: list[Path]
    pids: Path | None
    memory: Path | None
    memory_v1: bool = False
    cpu: Path | None = None
    cpu_v1: bool = False
    _oom_kills_seen: int = field(default=0, repr=False)
    # The file counting OOM kills, open for the slot's life: read after every cell.
    _events: int | None = field(default=None, repr=False)

    def procs(self) -> list[int]:
        with contextlib.suppress(OSError):
            return [int(pid) for pid in (self.dirs[0] / "cgroup.procs").read_text().split()]
        return []

    def memory_usage(self) -> int:
        assert self.memory is not None
        name = "memory.usage_in_bytes" if self.memory_v1 else "memory.current"
        return int((self.memory / name).read_text())

    def limit_memory(self, limit_bytes: int) -> None:
        """The most the slot's processes may hold, swap included, and no swap where v2 can say so."""
        assert self.memory is not None
        if self.memory_v1:
            (self.memory / "memory.limit_in_bytes").write_text(str(limit_bytes))
            # memory + swap; absent without swap accounting
            swap = self.memory / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(limit_bytes))
            return
        (self.memory / "memory.max").write_text(str(limit_bytes))
        swap = self.memory / "memory.swap.max"
        if swap.exists():
            swap.write_text("0")

    def limit_cpu(self, cores: float) -> None:
        """At most `cores` CPUs' worth of time for the slot's processes together (CFS bandwidth)."""
        assert self.cpu is not None
        quota = max(1000, round(cores * CPU_PERIOD_US))
        if self.cpu_v1:
            (self.cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (self.cpu / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.cpu / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")

    def new_oom_kills(self) -> int:
        """Processes the kernel killed for the memory limit since the last call."""
        if self.memory is None:
            return 0
        try:
            if self._events is None:
                name = "memory.oom_control" if self.memory_v1 else "memory.events"
                self._events = os.open(self.memory / name, os.O_RDONLY | os.O_CLOEXEC)
            text = os.pread(self._events, 4096, 0)
        except OSError:
            return 0
        _, found, rest = text.partition(b"\noom_kill ")
        kills = int(rest.split(b"\n", 1)[0]) if found else 0
        new, self._oom_kills_seen = kills - self._oom_kills_seen, kills
        return new

    def close(self) -> None:
        if self._events is not None:
            os.close(self._events)
            self._events = None


class CellCgroups:
    """Parent cgroups owned by this sandbox (one per hierarchy used); a `SlotCgroup` per slot."""

    def __init__(
        self, parents: dict[str, Path], made: list[Path], memory_v1: bool, cpu_v1: bool = False
    ) -> None:
        # controller → the parent directory whose children have it (one directory for all in v2)
        self.parents = parents
        self.memory_v1, self.cpu_v1 = memory_v1, cpu_v1
        self._ids = itertools.count()
        self._finalizer = weakref.finalize(self, _remove_all, made)

    @property
    def pids(self) -> bool:
        return "pids" in self.parents

    @property
    def memory(self) -> bool:
        return "memory" in self.parents

    @property
    def cpu(self) -> bool:
        return "cpu" in self.parents

    @classmethod
    def open(cls, cells: int = 1) -> CellCgroups | None:
        """The controllers this process can give each slot; None when it can give none. With the cpu
        controller, all slots together weigh as `cells` processes of t3rl's at nice 0: each of up to
        `cells` cells at once as one process, however many threads it runs."""
        name = f"t3rl-sandbox-{os.getpid()}-{next(_instances)}"
        try:
            v1, v2 = _own_cgroups()
        except OSError:
            return None
        parents: dict[str, Path] = {}
        made: list[Path] = []
        for controller in CONTROLLERS:
            if controller in v1 and _made(v1[controller] / name, made):
                parents[controller] = v1[controller] / name
        missing = [c for c in CONTROLLERS if c not in parents]
        if missing and v2 is not None and _made(v2 / name, made):
            for controller in _enable_v2(v2 / name, missing):
                parents[controller] = v2 / name
        memory_v1 = "memory" in v1 and parents.get("memory") == v1["memory"] / name
        cpu_v1 = "cpu" in v1 and parents.get("cpu") == v1["cpu"] / name
        if "cpu" in parents and not _weigh(parents["cpu"], cells, cpu_v1):
            del parents["cpu"]
        cgroups = cls(parents, made, memory_v1, cpu_v1)
        try:
            if not parents:
                raise OSError("no cgroup controller to use")
            probe = cgroups.create(1)
            if cgroups.memory:
                probe.limit_memory(1 << 30)
                probe.memory_usage()
            if cgroups.cpu:
                probe.limit_cpu(1.0)
            cgroups.remove(probe)
        except OSError:
            cgroups.close()
            return None
        return cgroups

    def create(self, max_processes: int) -> SlotCgroup:
        """A fresh slot cgroup in every hierarchy used, limited to `max_processes` tasks (memory is
        limited once the slot's zygote runs: see `SlotCgroup.limit_memory`)."""
        n = next(self._ids)
        dirs: dict[Path, Path] = {}
        try:
            for parent in dict.fromkeys(self.parents.values()):
                dirs[parent] = parent / f"cell-{n}"
                dirs[parent].mkdir()
            pids = dirs[self.parents["pids"]] if self.pids else None
            if pids is not None:
                (pids / "pids.max").write_text(str(max_processes))
        except OSError:
            for path in dirs.values():
                _remove_tree(path)
            raise
        memory = dirs[self.parents["memory"]] if self.memory else None
        cpu = dirs[self.parents["cpu"]] if self.cpu else None
        return SlotCgroup(list(dirs.values()), pids, memory, self.memory_v1, cpu, self.cpu_v1)

    def remove(self, slot: SlotCgroup) -> None:
        """Kill whatever is left in the slot's cgroups, then delete them."""
        slot.close()
        for path in slot.dirs:
            _remove_tree(path)

    def close(self) -> None:
        self._finalizer()


def _weigh(parent: Path, processes: int, v1: bool) -> bool:
    """Give the cgroup `parent` the scheduler weight of `processes` nice-0 processes; False if refused."""
    try:
        if v1:
            (parent / "cpu.shares").write_text(str(min(processes * _V1_SHARES, _V1_SHARES_MAX)))
        else:
            (parent / "cpu.weight").write_text(str(min(processes * _V2_WEIGHT, _V2_WEIGHT_MAX)))
    except OSError:
        return False
    return True


def _made(path: Path, made: list[Path]) -> bool:
    try:
        path.mkdir()
    except OSError:
        return False
    made.append(path)
    return True


def _enable_v2(parent: Path, wanted: list[str]) -> list[str]:
    """Enable for the children of `parent` (a v2 cgroup without processes) those of `wanted` it has."""
    try:
        available = (parent / "cgroup.controllers").read_text().split()
    except OSError:
        return []
    enabled = []
    for controller in wanted:
        if controller in available:
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text(f"+{controller}")
                enabled.append(controller)
    return enabled


def _remove_all(paths: list[Path]) -> None:
    for path in paths:
        _remove_tree(path)


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
