"""Turn a forked cell into an unprivileged process: no capabilities, an unprivileged uid/gid without
supplementary groups, `no_new_privs`, resource limits."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource

from .libc import LIBC, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, check, prctl

_CAPABILITY_VERSION_3 = 0x20080522
# /proc/<pid>/oom_score_adj: the OOM killer never picks -1000 and always picks 1000 before 0.
OOM_NEVER, OOM_FIRST = -1000, 1000


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [(field, ctypes.c_uint32) for field in ("effective", "permitted", "inheritable")]


def drop_bounding_set() -> None:
    """No capability can be regained by exec (needs CAP_SETPCAP: call before giving up the uid). A
    process without capabilities (not root, no user namespace) may not, and has no need to: with
    no_new_privs no exec grants it any."""
    if not _has_capabilities():
        return
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        prctl(PR_CAPBSET_DROP, cap)


def _has_capabilities() -> bool:
    with open("/proc/self/status") as f:
        return any(line.startswith("CapEff:") and int(line.split()[1], 16) for line in f)


def drop_capabilities() -> None:
    """Empty the current sets. Setuid away from root does that by itself; in a user namespace the cell
    stays uid 0 of a namespace whose mounts it could otherwise remount writable."""
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    check(LIBC.capset(ctypes.byref(header), data), "capset")


def become(uid: int, gid: int) -> None:
    """Real, effective and saved ids all set, groups emptied first (setgroups needs the privilege)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_oom_score_adj(score: int) -> None:
    """Lowering needs CAP_SYS_RESOURCE: without it the score stays as it was."""
    with contextlib.suppress(OSError):
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        try:
            os.write(fd, str(score).encode())
        finally:
            os.close(fd)


def lower_priority(nice: int) -> None:
    """Run this process (and what it starts) at `nice`, and its session's autogroup too: a cell is a
    session of its own, and where the kernel groups by session only the group's niceness counts."""
    os.setpriority(os.PRIO_PROCESS, 0, nice)
    with contextlib.suppress(OSError):  # no CONFIG_SCHED_AUTOGROUP, or autogroups disabled
        fd = os.open("/proc/self/autogroup", os.O_WRONLY)
        try:
            os.write(fd, str(nice).encode())
        finally:
            os.close(fd)


MEMLOCK_BYTES = 64 * 1024
# Signals a cell may have queued at once, and all the cells of a zygote without root together (see
# `cap_pending_signals`): the kernel counts them per user, against the limit of the process they are
# queued to, so without a cap of its own a cell (which may raise its soft limit to the hard one) could
# queue as many as t3rl's user may, and every other process of that user then fails `sigqueue` and
# `timer_create` with EAGAIN. A program queues a handful.
PENDING_SIGNALS = 1024


def cap_pending_signals() -> None:
    """RLIMIT_SIGPENDING at `PENDING_SIGNALS`, soft and hard. Called by a zygote without root before it
    makes its user namespace: the namespace keeps the soft limit its maker had as the most its
    processes may count against the invoking uid, whatever limit a cell sets later."""
    _, hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)
    cap = PENDING_SIGNALS if hard == resource.RLIM_INFINITY else min(PENDING_SIGNALS, hard)
    resource.setrlimit(resource.RLIMIT_SIGPENDING, (cap, cap))


def cap_queue_bytes() -> None:
    """RLIMIT_MSGQUEUE at 0, soft and hard, in a zygote without root before it makes its user namespace
    (as `cap_pending_signals`): the namespace keeps it as the most its cells may count against the
    invoking uid."""
    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))


def set_limits(limits: dict[str, int], *, nproc: bool, own_uid: bool = True) -> None:
    """`nproc`: apply RLIMIT_NPROC too (only without a pids cgroup: it counts every process of the uid).
    `own_uid`: the cell runs as a uid of its own; else it keeps t3rl's, and the bytes of POSIX message
    queues, counted per uid (`RLIMIT_MSGQUEUE`, 800 KiB by default for all of that user's processes), are
    none of its: a cell could otherwise hold all of them, and every `mq_open` of t3rl's user fail."""
    # 1, not 0: the kernel ignores RLIMIT_CORE for a pipe handler (core_pattern `|…`: systemd-coredump,
    # apport, run as root on the host) but at exactly 1, and makes no file dump below a page. Seccomp keeps
    # a cell from changing it (seccomp.RLIMIT_CORE). Under a hard limit of 0 (`ulimit -Hc 0`), 0.
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (1, 1))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    wanted = {
        # Every descriptor can pin kernel memory no limit counts (a socket's queued data, a pipe).
        resource.RLIMIT_NOFILE: (limits["open_files"], limits["open_files"]),
        # SIGXCPU at the limit, SIGKILL one second later if the cell ignores it.
        resource.RLIMIT_CPU: (limits["cpu_s"], limits["cpu_s"] + 1),
        resource.RLIMIT_AS: (limits["memory_bytes"], limits["memory_bytes"]),
        resource.RLIMIT_FSIZE: (limits["fsize_bytes"], limits["fsize_bytes"]),
        # Whatever t3rl was started with (limits.conf's `rtprio` for a group, docker's `--ulimit rtprio`,
        # systemd's LimitRTPRIO=): a real-time policy would starve the machine past any cpu cgroup's
        # quota (which counts only ordinary tasks), and a lower nice would outweigh t3rl's processes.
        resource.RLIMIT_RTPRIO: (0, 0),
        resource.RLIMIT_NICE: (0, 0),
        # Training hosts often run with memlock unlimited (RDMA, NCCL): memory a cell locks could not be
        # swapped or reclaimed. The kernel's default, 64 KiB, for what locks a few pages (a key's buffer).
        resource.RLIMIT_MEMLOCK: (MEMLOCK_BYTES, MEMLOCK_BYTES),
        resource.RLIMIT_SIGPENDING: (PENDING_SIGNALS, PENDING_SIGNALS),
    }
    if nproc:
        wanted[resource.RLIMIT_NPROC] = (limits["nproc"], limits["nproc"])
    if not own_uid:
        wanted[resource.RLIMIT_MSGQUEUE] = (0, 0)
    for which, (soft, hard) in wanted.items():
        _, current_hard = resource.getrlimit(which)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        resource.setrlimit(which, (soft, hard))
    # Every other limit a cell inherits from t3rl is pinned at t3rl's soft value, soft and hard: a cell
    # raises no limit past what it was started with (a host's hard limits are often unlimited: a cell
    # raised RLIMIT_STACK from 8 MiB to unlimited, which its threads' stacks and its children follow).
    # RLIMIT_CPU's one second between soft and hard is `wanted`'s, on purpose.
    for which in inherited_limits(wanted):
        soft, _ = resource.getrlimit(which)
        resource.setrlimit(which, (soft, soft))


def inherited_limits(wanted: dict[int, tuple[int, int]]) -> list[int]:
    """The limits `set_limits` does not choose a value for (RLIMIT_STACK, RLIMIT_DATA, RLIMIT_RSS,
    RLIMIT_RTTIME, …, whatever this Python's `resource` knows), each once (RLIMIT_OFILE is RLIMIT_NOFILE)."""
    chosen = {*wanted, resource.RLIMIT_CORE}
    return sorted({
        value for name, value in vars(resource).items() if name.startswith("RLIMIT_") and value not in chosen
    })  # fmt: skip
