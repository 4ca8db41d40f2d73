"""Round ten of hostile cells (docs/explanation/sandbox.md, "Round ten"): what the kernel counts per
machine rather than per cell.

- `sync()` and `syncfs()`: the whole machine's writeback (or a host filesystem's), which a cell calling
  them in a loop keeps every other process waiting on, and which no cgroup of the cell's charges it for.
  Now answered as done without writing anything back (seccomp, `NO_OPS`).
"""

from __future__ import annotations

import errno
import os
import platform
from collections.abc import Iterator

import pytest

from t3rl_core.sandbox.child import seccomp
from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.sandbox.conftest import host_offers
from tests.sandbox.test_sandbox_redteam import Pool, outcomes


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    if not host_offers("seccomp"):
        pytest.skip("this host has no seccomp filter")
    pool = Pool(LocalSandboxConfig(timeout_s=300.0, max_concurrency=2))
    try:
        yield pool
    finally:
        pool.close()


# ------------------------------------------------------------------ sync


def _run_filter(code: list[tuple[int, int, int, int]], nr: int, arch: int, args: tuple[int, ...]) -> int:
    """What classic BPF `code` returns for a system call (the subset of instructions the filter uses)."""
    data = [nr, arch, 0, 0]  # nr, arch, instruction pointer (two words)
    for arg in (*args, 0, 0, 0, 0, 0, 0)[:6]:
        data += [arg & 0xFFFFFFFF, arg >> 32]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == seccomp.LD_ABS:
            acc = data[k // 4]
        elif op == seccomp.AND:
            acc &= k
        elif op == seccomp.RET:
            return k
        elif op in (seccomp.JEQ, seccomp.JGE, seccomp.JSET):
            taken = {seccomp.JEQ: acc == k, seccomp.JGE: acc >= k, seccomp.JSET: bool(acc & k)}[op]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"instruction {op:#x} not simulated")
        pc += 1


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_sync_and_syncfs_are_answered_as_done_without_writing_back(machine: str) -> None:
    """The filter of both architectures: success (errno 0) without the call, while the calls it lets
    through (fsync, write) stay allowed. Before: allowed, the machine's whole writeback."""
    arch = seccomp.arch_for(machine)
    assert arch is not None
    code = seccomp.assemble(seccomp.program(arch))
    for name in ("sync", "syncfs"):
        assert _run_filter(code, arch.numbers[name], arch.audit, (3,)) == seccomp.RET_ERRNO | 0, name
    fsync = {"x86_64": 74, "aarch64": 82}[machine]
    assert _run_filter(code, fsync, arch.audit, (3,)) == seccomp.RET_ALLOW


SYNCFS = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
number = {"x86_64": 306, "aarch64": 267}[os.uname().machine]
answer = libc.syscall(number, -1)
print("syncfs: " + ("0" if answer == 0 else os.strerror(ctypes.get_errno())), flush=True)
os.sync()
with open("f", "w") as f:
    f.write("x")
    f.flush()
    os.fsync(f.fileno())
print("fsync: ok", flush=True)
"""


def test_a_cells_syncfs_never_reaches_the_kernel(pool: Pool) -> None:
    """`syncfs(-1)` is EBADF where the kernel reads it (before): answered 0 by the filter now; `sync()` and
    `fsync()` of the cell's own file still work."""
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("no seccomp filter for this machine")
    result = pool.run(SYNCFS)
    assert result.status == "success", result
    assert outcomes(result) == {"syncfs": "0", "fsync": "ok"}, result
    assert os.strerror(errno.EBADF) not in result.stdout
