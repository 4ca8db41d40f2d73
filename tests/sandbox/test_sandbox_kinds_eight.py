"""Round nine of hostile cells (docs/explanation/sandbox.md, "Round nine"): kernel objects a cell can hold
outside everything that confines it.

- Linux AIO: `io_setup` contexts count against one limit for the whole machine (`fs.aio-max-nr`, 65536
  events by default), not per user or namespace. A cell took all of it (`aio-nr` 65536 of 65536) for as
  long as it ran: every other process's `io_setup` then failed with EAGAIN (DeepSpeed's NVMe offload,
  a database). Now refused as io_uring is (ENOSYS, so a library falls back to threads).
- POSIX message queues on a host without user namespaces (no IPC namespace per cell): `mq_open` made a
  queue in the host's IPC namespace that outlives the cell, also where Landlock then refused to open it
  (the queue is created before the open is checked), up to the host's `fs.mqueue.queues_max` (256) for
  every unprivileged user, and left for every later cell to find (`O_EXCL` tells an existing name from a
  new one). Now refused where the cell has no IPC namespace of its own.
"""

from __future__ import annotations

import ctypes
import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.sandbox.conftest import host_offers
from tests.sandbox.test_sandbox_redteam import Pool, fallback, outcomes, planted  # noqa: F401 - a fixture

AIO = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
number = {"x86_64": 206, "aarch64": 0}[os.uname().machine]
def setup(events):
    context = ctypes.c_ulong(0)
    if libc.syscall(number, events, ctypes.byref(context)) == 0:
        return "ok"
    return os.strerror(ctypes.get_errno())
held, answers = 0, set()
for size in (32768, 16384, 8192, 4096, 1024, 256, 1):
    while (answer := setup(size)) == "ok":
        held += size
    answers.add(answer)
print("held: " + str(held), flush=True)
print("answers: " + ",".join(sorted(answers)), flush=True)
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    if not host_offers("seccomp"):
        pytest.skip("this host has no seccomp filter")
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=1))
    try:
        yield pool
    finally:
        pool.close()


def test_a_cell_holds_none_of_the_machines_aio_contexts(pool: Pool) -> None:
    """Before: `held: 65536` (all of `fs.aio-max-nr` on this host) while the cell ran."""
    result = pool.run(AIO)
    assert result.status == "success", result
    seen = outcomes(result)
    assert seen["held"] == "0", seen
    assert seen["answers"] == os.strerror(errno.ENOSYS), seen
    pool.serves()


def _mq_code(name: str) -> str:
    return (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"queue = libc.mq_open({name.encode()!r}, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)\n"
        "print('mq_open: ' + ('ok' if queue >= 0 else os.strerror(ctypes.get_errno())), flush=True)\n"
    )


def _unlink_queue(name: str) -> bool:
    """Whether the host's IPC namespace held the queue `name` (removed now)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.mq_unlink(name.encode()) == 0


@pytest.mark.parametrize("lacking", ["userns", "userns,landlock"])
def test_a_cell_without_an_ipc_namespace_leaves_no_message_queue_on_the_host(
    planted: Path,  # noqa: F811 - the fixture
    lacking: str,
) -> None:
    """Without user namespaces (cells share the host's IPC namespace). Before: the queue was on the host
    after the sandbox ended, with Landlock (`mq_open` answered EACCES, the queue made all the same) and
    without it (`ok`)."""
    if "landlock" not in lacking and not host_offers("landlock"):
        pytest.skip("this host has no Landlock")
    name = f"/t3rl-kinds-eight-{uuid.uuid4().hex[:12]}"
    try:
        report = fallback(planted, lacking, "t3rl-kinds-eight-" + uuid.uuid4().hex, {"mq": _mq_code(name)})
    finally:
        left = _unlink_queue(name)
    status, stdout, stderr = report["attacks"]["mq"]
    assert status == "success", report["attacks"]["mq"]
    assert stdout == "mq_open: " + os.strerror(errno.EPERM) + "\n", (stdout, stderr)
    assert not left, "the cell's message queue outlived it in the host's IPC namespace"


def test_a_cell_with_its_own_ipc_namespace_may_make_a_message_queue(pool: Pool) -> None:
    """Where each cell has an IPC namespace (this pool), a queue dies with it: seccomp does not refuse
    `mq_open` (Landlock may still refuse to open the queue: EACCES)."""
    name = f"/t3rl-kinds-eight-{uuid.uuid4().hex[:12]}"
    try:
        result = pool.run(_mq_code(name))
    finally:
        left = _unlink_queue(name)
    assert result.status == "success", result
    assert outcomes(result)["mq_open"] != os.strerror(errno.EPERM), result
    assert not left
