"""Landlock for cells: reads only beneath an allow-list (the system, the interpreter's trees, the cell's
own directories), writes only beneath the cell's own directories, no TCP, and (ABI 6+) no abstract
unix socket or signal reaching outside the cell. Landlock also forbids ptrace of any process outside
the domain (which covers /proc/<pid>/environ and /proc/<pid>/mem). Each feature is used only when the
running kernel's ABI version has it.

Reads are an allow-list so that whatever else the host keeps (the project's checkout, run
directories, prepared data with the answers, other cells' directories, a home's credentials where no
mount namespace covers them) stays unread without being named. Connecting to a filesystem unix socket
is no Landlock right in ABI versions 1-7 (the seccomp layer refuses AF_UNIX sockets instead).
"""

from __future__ import annotations

import ctypes
import os

from .libc import check, syscall

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE = 1 << 12, 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_WRITES_V1 = (
    FS_WRITE_FILE | FS_REMOVE_DIR | FS_REMOVE_FILE | FS_MAKE_CHAR | FS_MAKE_DIR | FS_MAKE_REG
    | FS_MAKE_SOCK | FS_MAKE_FIFO | FS_MAKE_BLOCK | FS_MAKE_SYM
)  # fmt: skip
# Rights that apply to a file (rather than a directory hierarchy).
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE
# Executing a file opens it for reading too, so these also bound what a cell can run.
READS = FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    return max(syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION), 0)


def handled_writes(abi: int) -> int:
    rights = _WRITES_V1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    return rights


def restrict(
    writable_dirs: list[str], writable_files: list[str], abi: int, readable: list[str] | None = None
) -> None:
    """Confine this process and its future children (needs no_new_privs). `abi` from abi_version(), >= 1.
    With `readable` (directories or files; missing ones are skipped), reads as well: only beneath those
    and the writable places."""
    writes = handled_writes(abi)
    reads = 0 if readable is None else READS
    attr = _RulesetAttr(fs=writes | reads)
    size = 8
    if abi >= 4:
        attr.net, size = NET_BIND_TCP | NET_CONNECT_TCP, 16
    if abi >= 6:
        attr.scoped, size = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL, 24
    ruleset = check(
        syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0), "landlock ruleset"
    )
    try:
        rules = [
            *((path, writes | reads) for path in writable_dirs),
            *((path, (writes | reads) & _FILE_RIGHTS) for path in writable_files),
            *((path, reads) for path in readable or []),
        ]
        for path, allowed in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    allowed &= _FILE_RIGHTS
                rule = _PathBeneath(allowed, fd)
                check(
                    syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0),
                    f"landlock rule {path}",
                )
            finally:
                os.close(fd)
        check(syscall(SYS_RESTRICT_SELF, ruleset, 0), "landlock restrict_self")
    finally:
        os.close(ruleset)
