"""Removing the SysV IPC objects a cell left in its own IPC namespace, before its init exits.

The kernel frees a dead IPC namespace's shared memory, queues and semaphores later, from a work
queue; until then what they hold is still charged to the slot's memory cgroup, where it would count
against the next cell. Removed explicitly, a segment no process maps is freed at once.
"""

from __future__ import annotations

import contextlib
import ctypes

from .libc import LIBC

IPC_RMID = 0
# /proc/sysvipc file → the libc call that removes one of its objects (the id is the second column).
_KINDS = {
    "shm": lambda ident: LIBC.shmctl(ident, IPC_RMID, None),
    "msg": lambda ident: LIBC.msgctl(ident, IPC_RMID, None),
    "sem": lambda ident: LIBC.semctl(ident, 0, IPC_RMID),
}


def remove_sysv_objects() -> None:
    """Every SysV object of this process's IPC namespace (needs to own them, or CAP_IPC_OWNER there)."""
    for kind, remove in _KINDS.items():
        with contextlib.suppress(OSError), open(f"/proc/sysvipc/{kind}") as f:
            for line in f.readlines()[1:]:
                remove(ctypes.c_int(int(line.split()[1])))
