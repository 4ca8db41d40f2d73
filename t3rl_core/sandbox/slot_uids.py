"""One uid per slot: cells that run at the same time never share a uid.

The kernel counts some resources per user, whatever namespace or cgroup a process is in: pending
signals (`RLIMIT_SIGPENDING`, checked against the total of every process of the uid: a cell that queues
real-time signals to itself until the limit makes every other process of the uid fail `sigqueue` and
`timer_create` with EAGAIN), the pages of every pipe (`fs.pipe-user-pages-soft`: past it, each new pipe
of the uid gets two pages and `F_SETPIPE_SZ` fails), POSIX message-queue bytes (`RLIMIT_MSGQUEUE`),
epoll watches (`fs.epoll.max_user_watches`), locked shared memory and, without a pids cgroup, processes
(`RLIMIT_NPROC`). With one uid for every cell, one cell could exhaust each of them for all the cells
running beside it. A slot runs one cell at a time, and a cell's processes are gone before its slot's next
cell starts (its PID namespace dies with it), so a uid per slot gives every cell these counters to
itself. t3rl's own processes run as root, another uid.

Only where t3rl is root (cells get their uid by setuid). Without root, cells keep the invoking uid in
a user namespace of their slot's zygote (docs/explanation/sandbox.md, "Not root").
"""

from __future__ import annotations

import pwd

from t3rl_core.counts import counted


def slot_uids(first: int, count: int) -> list[int]:
    """`count` uids for the slots: `first` (`cell_uid`, nobody by default), then the ids below it that
    name no user of this host (a user's files and processes are not a cell's to share; `nobody`'s
    neighbours 65520-65533 name none on most systems). Raises ValueError when fewer than `count` are
    free above 0."""
    uids = [first]
    candidate = first - 1
    while len(uids) < count and candidate > 0:
        if not _names_a_user(candidate):
            uids.append(candidate)
        candidate -= 1
    if len(uids) < count:
        raise ValueError(
            f"sandbox.cell_uid={first}: {counted(count, 'uid')} are needed, one per cell running at once "
            f"(max_concurrency), but only {len(uids)} at or below it name no user of this host; "
            "set cell_uid to a higher unused id"
        )
    return uids


def _names_a_user(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True
