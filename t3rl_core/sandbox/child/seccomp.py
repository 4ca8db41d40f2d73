"""A seccomp filter for cells, assembled as classic BPF and installed with prctl (no libseccomp needed).

What it refuses, and why a namespace or the uid drop alone does not cover it:
- ptrace, process_vm_readv/writev: reading or freezing another process (the supervisor above all).
- unshare, setns, and clone with any namespace flag: a user namespace gives a cell back capabilities
  over its own copies of the mounts; clone3 answers ENOSYS (its flags sit in memory the filter cannot
  read; the C library then falls back to clone, which is checked).
- socket(AF_UNIX) and datagram socketpair(AF_UNIX): a network namespace does not cover filesystem
  sockets, and a filter cannot read the path a connect() names, so a cell gets no unix socket of its
  own; stream socketpairs (asyncio, multiprocessing pipes) still work, and cannot be re-connected.
- io_uring: its operations open and connect sockets without passing through the filter.
- keyctl, add_key, request_key: the kernel keyring of the cell uid is shared by every cell.
- bpf, perf_event_open, userfaultfd: kernel attack surface no cell needs.
Only x86-64 is described here (the only architecture this was tested on); elsewhere the layer is
reported as missing rather than guessed.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
from dataclasses import dataclass

from .libc import prctl

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
# classic BPF opcodes: load word at absolute offset, jumps on equal / greater-or-equal / bits set, and, return
LD_ABS, JEQ, JGE, JSET, AND, RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (low word first)
NR_OFFSET, ARCH_OFFSET = 0, 4
# Every CLONE_NEW* flag clone() accepts (CLONE_NEWTIME only exists for unshare and clone3).
NAMESPACE_FLAGS = 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
SOCK_TYPE_MASK = 0xF

X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "unshare": 272,
    "setns": 308,
    "clone": 56,
    "clone3": 435,
    "socket": 41,
    "socketpair": 53,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
}
ALWAYS_REFUSED = (
    *("ptrace", "process_vm_readv", "process_vm_writev", "unshare", "setns"),
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"),
)
NOT_IMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")


@dataclass(frozen=True)
class _Insn:
    code: int
    k: int
    # Jump targets as labels (resolved to relative offsets); None = next instruction.
    true: str | None = None
    false: str | None = None


def _arg(index: int) -> int:
    return 16 + 8 * index


def _refuse(err: int) -> int:
    return RET_ERRNO | err


def program() -> list[_Insn | str]:
    """The filter as instructions and labels (a label names the instruction that follows it)."""
    nr = X86_64
    prog: list[_Insn | str] = [
        _Insn(LD_ABS, ARCH_OFFSET),
        _Insn(JEQ, AUDIT_ARCH_X86_64, false="kill"),
        _Insn(LD_ABS, NR_OFFSET),
        _Insn(JGE, X32_SYSCALL_BIT, true="kill"),
    ]
    for name in ALWAYS_REFUSED:
        prog.append(_Insn(JEQ, nr[name], true="eperm"))
    for name in NOT_IMPLEMENTED:
        prog.append(_Insn(JEQ, nr[name], true="enosys"))
    prog += [
        _Insn(JEQ, nr["clone"], true="clone"),
        _Insn(JEQ, nr["socket"], true="socket"),
        _Insn(JEQ, nr["socketpair"], true="socketpair"),
        _Insn(RET, RET_ALLOW),
        "clone",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JSET, NAMESPACE_FLAGS, true="eperm"),
        _Insn(RET, RET_ALLOW),
        "socket",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, socket.AF_UNIX, true="eperm"),
        _Insn(RET, RET_ALLOW),
        "socketpair",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, socket.AF_UNIX, false="allow"),
        _Insn(LD_ABS, _arg(1)),
        _Insn(AND, SOCK_TYPE_MASK),
        _Insn(JEQ, socket.SOCK_DGRAM, true="eperm"),
        "allow",
        _Insn(RET, RET_ALLOW),
        "eperm",
        _Insn(RET, _refuse(errno.EPERM)),
        "enosys",
        _Insn(RET, _refuse(errno.ENOSYS)),
        "kill",
        _Insn(RET, RET_KILL_PROCESS),
    ]
    return prog


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def assemble(prog: list[_Insn | str]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) per instruction; jumps only go forward, as classic BPF requires."""
    labels: dict[str, int] = {}
    insns: list[_Insn] = []
    for item in prog:
        if isinstance(item, str):
            labels[item] = len(insns)
        else:
            insns.append(item)

    def offset(at: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = labels[label] - at - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"jump to {label!r} out of range")
        return distance

    return [(i.code, offset(n, i.true), offset(n, i.false), i.k) for n, i in enumerate(insns)]


def supported() -> bool:
    return platform.machine() == "x86_64"


def install() -> None:
    """Apply the filter to this process and its future children (needs no_new_privs or CAP_SYS_ADMIN)."""
    code = assemble(program())
    filters = (_SockFilter * len(code))(*[_SockFilter(*row) for row in code])
    fprog = _SockFprog(len(code), filters)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog))
