"""Raw system calls the standard library lacks (mount, unshare, prctl, capset, syscall) through ctypes."""

from __future__ import annotations

import ctypes
import os


def _load() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return ctypes.CDLL(None, use_errno=True)


LIBC = _load()
LIBC.syscall.restype = ctypes.c_long

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x04000000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 24, 36, 38


def check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def mount(
    source: str | None, target: str, flags: int, fstype: str | None = None, data: str | None = None
) -> None:
    args = [x.encode() if x else None for x in (source, target, fstype)]
    check(LIBC.mount(*args, ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def unshare(flags: int) -> None:
    check(LIBC.unshare(flags), "unshare")


def prctl(option: int, *args: object) -> None:
    padded = [*args, 0, 0, 0, 0][:4]
    check(LIBC.prctl(option, *padded), f"prctl {option}")


def syscall(number: int, *args: object) -> int:
    return int(LIBC.syscall(number, *args))
