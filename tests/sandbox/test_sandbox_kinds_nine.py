"""Round ten of hostile cells (docs/explanation/sandbox.md, "Round ten"): what the kernel counts per
machine or per user rather than per cell.

- `sync()` and `syncfs()`: the whole machine's writeback (or a host filesystem's), which a cell calling
  them in a loop keeps every other process waiting on, and which no cgroup of the cell's charges it for.
  Now answered as done without writing anything back (seccomp, `NO_OPS`).
- Huge pages of the machine's hugetlb pool (`MAP_HUGETLB`, `MFD_HUGETLB`): reserved by an administrator
  for the whole machine (the trainer, NCCL, DPDK), counted by no memory cgroup by default: a cell took a
  free one. Now refused with ENOMEM, what an empty pool answers.
- Counters the kernel keeps per uid (pending signals, pipe pages, message-queue bytes, epoll watches,
  processes without a pids cgroup): every cell ran as `cell_uid`, so one cell could exhaust them for every
  cell running beside it. A cell that queued real-time signals to itself up to `RLIMIT_SIGPENDING` made
  every other cell's `sigqueue` fail with EAGAIN while it ran. Now each slot's cells run as a uid of their
  own (`t3rl_core.sandbox.slot_uids`) where t3rl is root.
"""

from __future__ import annotations

import asyncio
import errno
import os
import platform
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox.child import seccomp
from t3rl_core.sandbox.child.privileges import PENDING_SIGNALS
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.slot_uids import slot_uids
from tests.sandbox.conftest import host_offers
from tests.sandbox.test_sandbox_non_root import as_nobody
from tests.sandbox.test_sandbox_redteam import Pool, outcomes

# How long the host waits for a cell to have done what it must before the next one runs: a bound on a
# condition polled, not a delay (a busy machine takes what it takes).
DEADLINE_S = 120.0


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


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_huge_pages_of_the_machines_pool_are_refused_and_ordinary_ones_kept(machine: str) -> None:
    """mmap with MAP_HUGETLB and memfd_create with MFD_HUGETLB: ENOMEM, what a pool without free pages
    answers (a program falls back to ordinary pages). Before: allowed, pages no memory cgroup counts."""
    arch = seccomp.arch_for(machine)
    assert arch is not None
    enomem = seccomp.RET_ERRNO | errno.ENOMEM
    for refused in ((), seccomp.MEMFD):
        code = seccomp.assemble(seccomp.program(arch, refused))
        mmap, memfd = arch.numbers["mmap"], arch.numbers["memfd_create"]
        assert _run_filter(code, mmap, arch.audit, (0, 1 << 21, 3, 0x22 | seccomp.MAP_HUGETLB)) == enomem
        assert _run_filter(code, mmap, arch.audit, (0, 1 << 21, 3, 0x22)) == seccomp.RET_ALLOW
        hugetlb_memfd = _run_filter(code, memfd, arch.audit, (0, seccomp.MFD_HUGETLB))
        assert hugetlb_memfd == (seccomp.RET_ERRNO | errno.EPERM if refused else enomem)
        plain_memfd = _run_filter(code, memfd, arch.audit, (0, 1))  # MFD_CLOEXEC
        assert plain_memfd == (seccomp.RET_ERRNO | errno.EPERM if refused else seccomp.RET_ALLOW)


HUGE_PAGE = r"""
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
int_ = ctypes.c_int
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, int_, int_, int_, ctypes.c_long]
size = 2 << 20
address = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE,
                    mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000, -1, 0)
if address in (None, ctypes.c_void_p(-1).value):
    print("huge: " + os.strerror(ctypes.get_errno()), flush=True)
else:
    ctypes.memset(address, 1, size)  # the page is taken from the pool when touched
    print("huge: taken", flush=True)
"""


def test_a_cell_takes_no_page_of_the_machines_huge_page_pool(pool: Pool) -> None:
    """With one free huge page in the pool (reserved for the test where root may, and given back), a
    cell's MAP_HUGETLB mapping is refused and the page stays free. Before: `huge: taken`."""
    pool_file = Path("/proc/sys/vm/nr_hugepages")
    before = int(pool_file.read_text())
    try:
        pool_file.write_text(str(before + 1))
    except OSError:
        pytest.skip("cannot reserve a huge page here")
    try:
        if _free_huge_pages() < 1:
            pytest.skip("the kernel found no memory for a huge page")
        result = pool.run(HUGE_PAGE)
        assert result.status == "success", result
        assert outcomes(result)["huge"] == os.strerror(errno.ENOMEM), result
    finally:
        pool_file.write_text(str(before))
    pool.serves()


def _free_huge_pages() -> int:
    line = next(
        line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("HugePages_Free")
    )
    return int(line.split()[1])


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


# ------------------------------------------------------------------ counters per uid


FILL = r"""
import os, signal
sig = signal.SIGRTMIN
signal.pthread_sigmask(signal.SIG_BLOCK, {sig})
def queued():
    line = next(line for line in open("/proc/self/status") if line.startswith("SigQ:"))
    count, limit = line.split()[1].split("/")
    return int(count), int(limit)
count, limit = queued()
while count < limit:
    for _ in range(min(4096, limit - count)):
        os.kill(os.getpid(), sig)  # queued: a real-time signal keeps one entry per kill
    now, _ = queued()
    if now == count:
        break  # the kernel queues no more
    count = now
print("held: %d of %d" % queued(), flush=True)
"""
# The same, then holding them until it is stopped.
FILL_SIGNALS = FILL + "import time\nwhile True:\n    time.sleep(3600)\n"

QUEUE_ONE = r"""
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGRTMIN})
answer = libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), ctypes.c_void_p(0))
print("sigqueue: " + ("ok" if answer == 0 else os.strerror(ctypes.get_errno())), flush=True)
print("uid: %d" % os.getuid(), flush=True)
"""


def _full_signal_queues() -> set[int]:
    """Host pids whose user's pending signals are at their limit (`SigQ: count/limit` of their status)."""
    full = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("SigQ:"):
                count, limit = (int(n) for n in line.split()[1].split("/"))
                if count >= limit:
                    full.add(int(entry.name))
    return full


def test_a_cell_holding_every_pending_signal_of_its_uid_leaves_the_next_cells_theirs(pool: Pool) -> None:
    """Before: the second cell's `sigqueue` failed with EAGAIN while the first held the queue (both ran as
    nobody). Now each slot's cells run as a uid of their own, and the second runs beside the first."""
    if os.geteuid() != 0:
        pytest.skip("cells get a uid per slot where t3rl is root (without root they keep t3rl's uid)")

    async def scenario() -> tuple[dict[str, str], bool]:
        holder = asyncio.ensure_future(pool.sandbox.run(FILL_SIGNALS))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE_S
        full = False
        while not holder.done() and loop.time() < deadline:
            full = bool(_full_signal_queues())
            if full:
                break
            await asyncio.sleep(0.2)
        try:
            beside = await pool.sandbox.run(QUEUE_ONE)
        finally:
            holder.cancel()
            await asyncio.gather(holder, return_exceptions=True)
        assert beside.status == "success", beside
        return outcomes(beside), full

    seen, full = pool.loop.run_until_complete(scenario())
    assert full, "the first cell never held its uid's whole signal queue"
    assert seen["sigqueue"] == "ok", seen
    assert int(seen["uid"]) != 65534, seen
    pool.serves()


def test_a_cell_queues_at_most_its_own_share_of_signals(pool: Pool) -> None:
    """Before: 96365 here (its user's whole limit, t3rl's where cells keep t3rl's uid)."""
    result = pool.run(FILL)
    assert result.status == "success", result
    held, _, limit = outcomes(result)["held"].split()
    assert int(held) <= PENDING_SIGNALS and int(limit) <= PENDING_SIGNALS, result


NOBODY_FILLS = f"""
import asyncio
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

async def go():
    sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=60))
    try:
        result = await sandbox.run({FILL!r})
    finally:
        await sandbox.aclose()
    print(result.status, result.stdout.strip(), result.stderr[-2000:])

asyncio.run(go())
"""


def test_without_root_the_cells_take_at_most_their_share_of_the_invoking_users_signals() -> None:
    """t3rl started by an unprivileged user (nobody, as test_sandbox_non_root does it): its cells keep
    its uid in a user namespace, which counts what they queue against that uid up to the limit the
    namespace was made with. Before: 96365, every pending signal nobody may have."""
    done = as_nobody(NOBODY_FILLS, 600)
    assert done.returncode == 0, done.stderr
    status, _, rest = done.stdout.partition(" ")
    assert status == "success", done.stdout
    held = int(rest.split("held: ", 1)[1].split()[0])
    assert held <= PENDING_SIGNALS, done.stdout


def test_slot_uids_are_distinct_and_name_no_user_but_the_first() -> None:
    uids = slot_uids(65534, 32)
    assert len(set(uids)) == 32 and uids[0] == 65534 and all(0 < uid <= 65534 for uid in uids)
    assert not set(uids[1:]) & {user.pw_uid for user in pwd.getpwall()}


def test_too_few_free_uids_below_cell_uid_is_refused_with_the_fix() -> None:
    low = min(user.pw_uid for user in pwd.getpwall() if user.pw_uid > 0)  # a host's system users sit low
    if low >= 100:
        pytest.skip("no system user below uid 100 here")
    with pytest.raises(ValueError, match="set cell_uid to a higher unused id"):
        slot_uids(low, low + 1)
