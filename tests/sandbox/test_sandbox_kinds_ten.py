"""Round eleven of hostile cells (docs/explanation/sandbox.md, "Round eleven"): where t3rl is not root,
its cells keep its uid (in a user namespace of each slot), and what the kernel counts per uid rather
than per namespace is shared between them and t3rl.

- Pipe pages (`fs.pipe-user-pages-soft`, per uid whatever the namespace): a cell grew its pipes with
  `fcntl(F_SETPIPE_SZ)`, taking the uid's pages; past the soft limit every new pipe of t3rl's user gets
  two pages. Now F_SETPIPE_SZ is refused (EPERM) where cells keep t3rl's uid (seccomp, `PIPE_SIZE`).
- POSIX message-queue bytes (`RLIMIT_MSGQUEUE`, 800 KiB for all of a user's processes): a cell has its
  own IPC namespace there, so `mq_open` went as far as making the queue (counted against the uid)
  before Landlock refused to open it. Now such a cell's
  RLIMIT_MSGQUEUE is 0, soft and hard (and the zygote's before it makes the namespace).

Each test fails at the parent commit; where t3rl is root (cells as uids of their own) both stay allowed.
"""

from __future__ import annotations

import errno
import json

import pytest

from t3rl_core.sandbox.child import seccomp
from tests.sandbox.test_sandbox_kinds_nine import _run_filter
from tests.sandbox.test_sandbox_non_root import as_nobody

F_GETFL, F_SETFL, F_SETFD, F_GETPIPE_SZ = 3, 4, 2, 1032


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_growing_a_pipe_is_refused_where_cells_keep_t3rls_uid_and_every_other_fcntl_allowed(
    machine: str,
) -> None:
    arch = seccomp.arch_for(machine)
    assert arch is not None
    shared = seccomp.assemble(seccomp.program(arch, seccomp.PIPE_SIZE))
    own = seccomp.assemble(seccomp.program(arch))
    fcntl = arch.numbers["fcntl"]
    eperm = seccomp.RET_ERRNO | errno.EPERM
    assert _run_filter(shared, fcntl, arch.audit, (1, seccomp.F_SETPIPE_SZ, 1 << 20)) == eperm
    for command in (F_GETFL, F_SETFL, F_SETFD, F_GETPIPE_SZ):
        assert _run_filter(shared, fcntl, arch.audit, (1, command, 0)) == seccomp.RET_ALLOW
    # A cell with a uid of its own (t3rl is root) keeps F_SETPIPE_SZ: its pages are its own.
    assert _run_filter(own, fcntl, arch.audit, (1, seccomp.F_SETPIPE_SZ, 1 << 20)) == seccomp.RET_ALLOW
    # The rest of the filter is unchanged by the request (a call it refuses stays refused).
    assert _run_filter(shared, arch.numbers["ptrace"], arch.audit, (0,)) == eperm


TAKES = """
import ctypes, fcntl, json, os, resource
out = {}
try:
    fcntl.fcntl(1, 1031, 1 << 20)  # F_SETPIPE_SZ
    out["pipe"] = "grown"
except OSError as error:
    out["pipe"] = error.errno
out["mq_limit"] = list(resource.getrlimit(resource.RLIMIT_MSGQUEUE))
libc = ctypes.CDLL("libc.so.6", use_errno=True)
try:
    mq_open = libc.mq_open
except AttributeError:  # a C library before 2.34 keeps it in librt
    mq_open = ctypes.CDLL("librt.so.1", use_errno=True).mq_open
mq_open.restype = ctypes.c_int
fd = mq_open(b"/t3rl-round-eleven", os.O_CREAT | os.O_RDWR, 0o600, None)
out["mq"] = "opened" if fd >= 0 else ctypes.get_errno()
print(json.dumps(out))
"""

AS_T3RL = f"""
import asyncio
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

async def go():
    sandbox = LocalSandbox(LocalSandboxConfig(timeout_s=60))
    try:
        result = await sandbox.run({TAKES!r})
    finally:
        await sandbox.aclose()
    print(result.status, result.stdout.strip(), result.stderr[-2000:])

asyncio.run(go())
"""


def test_without_root_a_cell_takes_none_of_the_users_pipe_pages_or_queue_bytes() -> None:
    """t3rl started by nobody (as test_sandbox_non_root does it). Before: the pipe grown to 1 MiB (256
    of the uid's pages), RLIMIT_MSGQUEUE the user's 800 KiB and `mq_open` answered EACCES, Landlock's
    refusal to open a queue the kernel had already made and counted (round nine saw it so); now EMFILE,
    refused before anything is made."""
    done = as_nobody(AS_T3RL, 600)
    assert done.returncode == 0, done.stderr
    status, _, rest = done.stdout.partition(" ")
    assert status == "success", done.stdout
    report = json.loads(rest.split("\n", 1)[0].rsplit("}", 1)[0] + "}")
    assert report == {"pipe": errno.EPERM, "mq_limit": [0, 0], "mq": errno.EMFILE}, report
