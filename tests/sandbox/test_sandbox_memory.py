"""A cell's memory is capped as a whole, not only per process's address space (issue 22): memory held
through memfd, SysV or POSIX shared memory, or by many processes at once, stops at the cap, and the
next cell answers at once with its memory free again.

Both caps run here wherever the host allows: the memory cgroup of the cell's slot (root, cgroup v1
memory or v2 with the controller delegated), and the fallback a host without one gets (the address-space
limit, with seccomp refusing the calls that make memory it does not count), forced by withholding the
cgroups from the sandbox.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from t3rl_core.sandbox import local
from t3rl_core.sandbox.base import SandboxResult
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox, memory_cap, memory_cap_line
from tests.sandbox.conftest import host_offers, memory_cgroup_offered

MEMORY_MB, DISK_MB = 256, 16
CAP_MB = MEMORY_MB + DISK_MB
# What each attack tries to hold: far beyond the cap, far below this machine's memory.
TARGET_MB = 2048
# A generous bound that still shows the sandbox kept serving (not a restart after a time-out).
NEXT_CELL_DEADLINE_S = 5.0

# Prints the MiB held so far after each step, so the verdict shows how far the cell got.
PRELUDE = f"""
import ctypes, os, sys, time
MiB = 1 << 20
TARGET = {TARGET_MB} * MiB
held = 0
def hold(n):
    global held
    held += n
    print(held // MiB, flush=True)
"""
MEMFD = """
chunk = b"x" * (16 * MiB)
fds = []
while held < TARGET:
    fd = os.memfd_create("held")
    os.write(fd, chunk)
    fds.append(fd)
    hold(len(chunk))
"""
SYSV = """
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
while held < TARGET:
    segment = libc.shmget(0, 64 * MiB, 0o1600)  # IPC_PRIVATE, IPC_CREAT, owner read/write
    if segment < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    address = libc.shmat(segment, None, 0)
    ctypes.memset(address, 1, 64 * MiB)
    libc.shmdt(ctypes.c_void_p(address))  # detached: no process maps it any more
    hold(64 * MiB)
"""
POSIX = """
from multiprocessing import shared_memory
blocks = []
while held < TARGET:
    block = shared_memory.SharedMemory(create=True, size=16 * MiB)
    block.buf[:] = b"x" * (16 * MiB)
    blocks.append(block)
    hold(16 * MiB)
"""
PLAIN = """
chunks = []
while held < TARGET:
    chunks.append(bytearray(b"x" * (16 * MiB)))
    hold(16 * MiB)
"""
# Each child holds 96 MiB (well within its own address-space limit); the parent prints what its
# living children hold together after each one is ready.
PROCESSES = """
children = []
for _ in range(TARGET // (96 * MiB)):
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        block = bytearray(b"x" * (96 * MiB))
        os.write(ready_w, b"r")
        time.sleep(60)
        os._exit(0)
    os.close(ready_w)
    os.read(ready_r, 1)
    os.close(ready_r)
    children.append(pid)
    children = [c for c in children if os.waitpid(c, os.WNOHANG) == (0, 0)]
    held = 0
    hold(len(children) * 96 * MiB)
"""
# The next cell: it answers, and the memory the attack held is free again.
NEXT = f"""
block = bytearray({MEMORY_MB // 2} << 20)
block[::4096] = b"x" * len(block[::4096])  # every page touched, so held
print("served")
"""


class Runner:
    """One sandbox on its own event loop, shared by a module's tests."""

    def __init__(self, sandbox: LocalSandbox) -> None:
        self.sandbox = sandbox
        self.loop = asyncio.new_event_loop()

    def attack(self, body: str) -> tuple[SandboxResult, int, SandboxResult]:
        """(the attack's result, the most MiB it held, the next cell's result)."""
        result = self.loop.run_until_complete(self.sandbox.run(PRELUDE + body))
        held = max([int(line) for line in result.stdout.split() if line.isdigit()], default=0)
        after = self.loop.run_until_complete(asyncio.wait_for(self.sandbox.run(NEXT), NEXT_CELL_DEADLINE_S))
        return result, held, after

    def close(self) -> None:
        self.loop.run_until_complete(self.sandbox.aclose())
        self.loop.close()


def config() -> LocalSandboxConfig:
    return LocalSandboxConfig(memory_mb=MEMORY_MB, cell_disk_mb=DISK_MB, max_processes=32, timeout_s=30)


@pytest.fixture(scope="module")
def with_cgroup() -> Iterator[Runner]:
    if not memory_cgroup_offered():
        pytest.skip("this host gives no memory cgroup to a child of this process")
    runner = Runner(LocalSandbox(config()))
    assert runner.sandbox.protections.active["memory"].startswith("memory cgroup: 272 MiB")
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def without_cgroup() -> Iterator[Runner]:
    if not host_offers("seccomp"):
        pytest.skip("this host has neither a memory cgroup for cells nor seccomp here")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local, "_cgroups", lambda config: None)
        runner = Runner(LocalSandbox(config()))
    assert runner.sandbox.protections.active["memory"].startswith("no memory cgroup on this host")
    yield runner
    runner.close()


def served(after: SandboxResult) -> bool:
    return (after.status, after.stdout) == ("success", "served\n")


CGROUP_VERDICT = f"memory limit of {CAP_MB} MiB for the whole cell exceeded"


@pytest.mark.parametrize("body", [MEMFD, SYSV, PROCESSES], ids=["memfd", "sysv", "processes"])
def test_memory_outside_the_address_space_stops_at_the_cgroup_cap(with_cgroup, body):
    result, held, after = with_cgroup.attack(body)
    assert result.status == "error" and result.error.startswith(CGROUP_VERDICT), result
    # It got somewhere (the calls work) but never held more than the cap.
    assert 64 <= held <= CAP_MB, result.stdout
    assert served(after), after


@pytest.mark.parametrize("body", [MEMFD, SYSV], ids=["memfd", "sysv"])
def test_without_a_cgroup_the_calls_that_make_uncounted_memory_are_refused(without_cgroup, body):
    result, held, after = without_cgroup.attack(body)
    assert (result.status, result.exit_code, held) == ("error", 1, 0), result
    assert result.stderr.rstrip().splitlines()[-1] == "PermissionError: [Errno 1] Operation not permitted"
    assert served(after), after


@pytest.mark.parametrize("cap", ["with_cgroup", "without_cgroup"])
def test_posix_shared_memory_stops_at_the_cell_disk(cap, request):
    result, held, after = request.getfixturevalue(cap).attack(POSIX)
    # /dev/shm is part of the cell's tmpfs: writing a mapped block beyond it is a SIGBUS.
    assert (result.status, result.exit_code) == ("error", -7), result
    assert result.error.startswith("killed by SIGBUS (a mapped file beyond the cell's 16 MiB"), result.error
    assert held <= DISK_MB
    assert served(after), after


@pytest.mark.parametrize("cap", ["with_cgroup", "without_cgroup"])
def test_a_plain_allocation_stops_at_the_address_space_limit(cap, request):
    result, held, after = request.getfixturevalue(cap).attack(PLAIN)
    assert result.status == "error" and result.stderr.rstrip().endswith("MemoryError"), result
    assert held <= MEMORY_MB
    assert served(after), after


def test_plan_names_the_cap_this_host_gives():
    expected = "cgroup" if memory_cgroup_offered() else "seccomp" if host_offers("seccomp") else "none"
    assert memory_cap(config()) == expected
    line = memory_cap_line(config())
    assert line.startswith("local sandbox memory cap: ")
    assert ("memory cgroup: 272 MiB" in line) == (expected == "cgroup")
    assert memory_cap(config().model_copy(update={"isolation": "none"})) == "none"
