"""Raw system calls the standard library lacks (mount, umount2, pivot_root, unshare, prctl, capset, syscall)
through ctypes."""

from __future__ import annotations

import ctypes
import os
import platform


def _load() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return ctypes.CDLL(None, use_errno=True)


LIBC = _load()
LIBC.syscall.restype = ctypes.c_long

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x04000000, 0x08000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
CLONE_NEWCGROUP = 0x02000000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 24, 36, 38
MNT_DETACH = 2
# pivot_root has no C library wrapper: its number in x86-64's table and in the generic one (aarch64).
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


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


def umount2(target: str, flags: int) -> None:
    check(LIBC.umount2(target.encode(), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: no system call number for {platform.machine()}")
    check(syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


def unshare(flags: int) -> None:
    check(LIBC.unshare(flags), "unshare")


def prctl(option: int, *args: object) -> None:
    padded = [*args, 0, 0, 0, 0][:4]
    check(LIBC.prctl(option, *padded), f"prctl {option}")


def syscall(number: int, *args: object) -> int:
    return int(LIBC.syscall(number, *args))
