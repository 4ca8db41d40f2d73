"""Round eight of hostile cells (docs/explanation/sandbox.md, "Round eight"): a crash's core dump.

A cell started with RLIMIT_CORE 0 and is not dumpable after its uid drop, but it may set itself dumpable
(`prctl(PR_SET_DUMPABLE, 1)`), and every program it starts is dumpable again after `execve`. The kernel
ignores RLIMIT_CORE when `core_pattern` pipes dumps to a handler (`|/usr/lib/systemd/systemd-coredump …`,
apport), except at exactly 1, its guard against a handler's own crash: a crashing child would then run
the host's handler as root, which stores the cell's memory (up to its address-space limit, per crash)
outside the cell's disk cap. Cells now start with RLIMIT_CORE 1 (no file dump below a page, no pipe
dump at 1) and seccomp refuses a new RLIMIT_CORE (`setrlimit`, `prlimit64`), so neither the cell nor what
it starts can lower it to 0.

This host's `core_pattern` is not changed by a test (it is the machine's): what is checked is the limit
the kernel reads at a crash, in the cell and in a program it starts after trying every way to change it,
and that a crash leaves no core file where `core_pattern` is a file name.
"""

from __future__ import annotations

import os
import resource
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from t3rl_core.sandbox.config import LocalSandboxConfig
from tests.sandbox.conftest import host_offers
from tests.sandbox.test_sandbox_redteam import Pool, fallback, outcomes, planted  # noqa: F401 - a fixture

CHANGES = r"""
import ctypes, os, resource, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
def tried(label, call):
    try:
        call()
        print(label + ": ok", flush=True)
    except OSError as err:
        print(label + ": " + str(err.strerror), flush=True)
    except ValueError as err:  # how CPython's resource module reports EPERM
        print(label + ": " + str(err), flush=True)
print("dumpable: " + str(libc.prctl(4, 1, 0, 0, 0) == 0), flush=True)  # PR_SET_DUMPABLE 1: allowed
tried("setrlimit", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 1)))
tried("prlimit", lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0)))
class Limit(ctypes.Structure):
    _fields_ = [("soft", ctypes.c_ulong), ("hard", ctypes.c_ulong)]
number = {"x86_64": 160, "aarch64": 164}[os.uname().machine]
def raw():
    if libc.syscall(number, 4, ctypes.byref(Limit(0, 0))) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
tried("raw setrlimit", raw)
print("cell limit: " + repr(resource.getrlimit(resource.RLIMIT_CORE)), flush=True)
child = subprocess.run(
    [sys.executable, "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_CORE))"],
    capture_output=True, text=True,
)
print("child limit: " + child.stdout.strip(), flush=True)
crash = subprocess.run([sys.executable, "-c", "import os; os.abort()"])
print("crash: " + str(crash.returncode), flush=True)
print("files: " + repr(sorted(name for name in os.listdir(".") if name.startswith("core"))), flush=True)
"""


@pytest.fixture(autouse=True)
def _core_limit_can_be_one() -> None:
    if resource.getrlimit(resource.RLIMIT_CORE)[1] == 0:
        pytest.skip("started under a hard RLIMIT_CORE of 0 (`ulimit -Hc 0`): cells keep 0 (sandbox.md)")


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    pool = Pool(LocalSandboxConfig(timeout_s=60.0, max_concurrency=1))
    try:
        yield pool
    finally:
        pool.close()


def test_no_crash_of_a_cell_or_what_it_starts_can_dump_its_core(pool: Pool) -> None:
    """RLIMIT_CORE is 1 in the cell and in a program it starts, however the cell tried to lower it
    (fails before this round: it was 0, which a pipe handler ignores, and a cell could set it)."""
    result = pool.run(CHANGES)
    assert result.status == "success", result
    seen = outcomes(result)
    assert seen["dumpable"] == "True"  # allowed: what is refused is the limit a dump needs
    assert (seen["cell limit"], seen["child limit"]) == ("(1, 1)", "(1, 1)"), result.stdout
    if host_offers("seccomp"):
        refused = ("not allowed to raise maximum limit", "Operation not permitted")
        assert (seen["setrlimit"], seen["prlimit"], seen["raw setrlimit"]) == (*refused, refused[1])
    assert seen["crash"] == "-6" and seen["files"] == "[]", result.stdout
    pool.serves()


def test_the_filter_leaves_every_other_limit_and_reading_the_core_limit_alone(pool: Pool) -> None:
    """Only a new RLIMIT_CORE is refused: a cell lowers its open files, reads every limit, and asks
    another process's limits (pid not 0) as before (refused)."""
    code = (
        "import resource, os\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "print('nofile:', resource.getrlimit(resource.RLIMIT_NOFILE))\n"
        "print('core:', resource.prlimit(0, resource.RLIMIT_CORE))\n"
        "try:\n    resource.prlimit(1, resource.RLIMIT_NOFILE)\n    print('other: ok')\n"
        "except OSError as err:\n    print('other:', err.strerror)\n"
    )
    result = pool.run(code)
    assert result.status == "success", result
    seen = outcomes(result)
    assert (seen["nofile"], seen["core"]) == ("(64, 64)", "(1, 1)"), result.stdout
    if host_offers("seccomp") and os.uname().machine in ("x86_64", "aarch64"):
        assert seen["other"] == "Operation not permitted", result.stdout


def test_without_namespaces_cells_keep_their_uid_and_still_cannot_dump_a_core(planted: Path) -> None:  # noqa: F811
    """Where t3rl is not root and has no user namespaces, cells keep t3rl's uid, so they are dumpable
    from the start: only the limit stops a crash's dump (stood in for as the earlier rounds do: as
    nobody, a seccomp filter refusing new user namespaces)."""
    code = CHANGES.replace("{", "{{").replace("}", "}}")  # the harness format()s an attack's code
    report = fallback(planted, "userns", "t3rl-core-" + uuid.uuid4().hex, {"core": code})
    status, stdout = report["attacks"]["core"][:2]
    assert status == "success", report["attacks"]["core"]
    seen = dict(line.split(": ", 1) for line in stdout.splitlines() if ": " in line)
    assert (seen["cell limit"], seen["child limit"]) == ("(1, 1)", "(1, 1)"), stdout
    assert seen["prlimit"] == seen["raw setrlimit"] == "Operation not permitted", stdout


def test_a_real_time_lower_nice_or_memlock_limit_t3rl_was_started_with_is_not_a_cells(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """t3rl started with RLIMIT_RTPRIO 99 and RLIMIT_NICE 40 (a group's `rtprio` in limits.conf, docker's
    `--ulimit rtprio=99`): a cell inherited both, and could make itself SCHED_FIFO (past any cpu cgroup's
    quota, which counts only ordinary tasks) or renice itself to -20. This host's limits are 0 and its
    root cannot raise them (no CAP_SYS_RESOURCE), so the limits a cell applies are read here with
    `resource` stood in for (fails before: neither was set)."""
    from t3rl_core.sandbox.child import privileges

    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    inherited = {
        resource.RLIMIT_RTPRIO: (99, 99),
        resource.RLIMIT_NICE: (40, 40),
        resource.RLIMIT_MEMLOCK: unlimited,
    }
    applied: dict[int, tuple[int, int]] = {}
    monkeypatch.setattr(
        privileges.resource, "getrlimit", lambda which: applied.get(which, inherited.get(which, (-1, -1)))
    )
    monkeypatch.setattr(
        privileges.resource, "setrlimit", lambda which, limits: applied.__setitem__(which, limits)
    )
    limits = {"open_files": 256, "cpu_s": 30, "memory_bytes": 1 << 30, "fsize_bytes": 1 << 26, "nproc": 64}
    privileges.set_limits(limits, nproc=False)
    assert applied[resource.RLIMIT_RTPRIO] == (0, 0) and applied[resource.RLIMIT_NICE] == (0, 0), applied
    assert applied[resource.RLIMIT_CORE] == (1, 1)
    assert applied[resource.RLIMIT_MEMLOCK] == (64 * 1024, 64 * 1024)  # memlock unlimited (RDMA hosts)


def test_a_cell_cannot_ask_for_a_real_time_policy_or_a_lower_nice(pool: Pool) -> None:
    """The outcome on this host (its limits are 0 already): refused by the limits and the dropped
    capabilities (CAP_SYS_NICE) together."""
    result = pool.run(
        "import os\n"
        "for label, call in [('fifo', lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))),\n"
        "                    ('nice', lambda: os.setpriority(os.PRIO_PROCESS, 0, -5))]:\n"
        "    try:\n        call()\n        print(label + ': ok')\n"
        "    except OSError as err:\n        print(label + ': ' + err.strerror)\n"
        "import resource\nprint('limits: ' + repr([resource.getrlimit(r) for r in "
        "(resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE)]))\n"
    )
    assert result.status == "success", result
    seen = outcomes(result)
    assert (seen["fifo"], seen["nice"]) == ("Operation not permitted", "Permission denied"), result.stdout
    assert seen["limits"] == "[(0, 0), (0, 0)]", result.stdout


def test_a_cell_locks_no_more_than_64_kib(pool: Pool) -> None:
    """mlock of 1 MiB (this host's own memlock limit is 8 MiB, a training host's often unlimited):
    refused; 16 KiB still locks (fails before: the cell had t3rl's 8 MiB)."""
    result = pool.run(
        "import ctypes, mmap, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "for size in (16 * 1024, 1 << 20):\n"
        "    area = mmap.mmap(-1, size)\n"
        "    address = ctypes.addressof(ctypes.c_char.from_buffer(area))\n"
        "    done = libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(size))\n"
        "    print(f'{size}: ' + ('ok' if done == 0 else os.strerror(ctypes.get_errno())))\n"
        "    libc.munlock(ctypes.c_void_p(address), ctypes.c_size_t(size))\n"
    )
    assert result.status == "success", result
    seen = outcomes(result)
    assert (seen["16384"], seen["1048576"]) == ("ok", "Cannot allocate memory"), result.stdout
