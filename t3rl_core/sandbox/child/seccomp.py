"""A seccomp filter for cells, assembled as classic BPF and installed with prctl (no libseccomp needed).

What it refuses, and why a namespace or the uid drop alone does not cover it:
- ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise, kcmp: reading, freezing or probing
  another process (the supervisor above all).
- unshare, setns, and clone with any namespace flag: a user namespace gives a cell back capabilities
  over its own copies of the mounts; clone3 answers ENOSYS (its flags sit in memory the filter cannot
  read; the C library then falls back to clone, which is checked).
- socket() of every address family but those in ALLOWED_FAMILIES (none: a cell needs no socket of its
  own), so a family that namespaces do not cover (AF_VSOCK reaches the VM's host, AF_UNIX filesystem
  sockets, the next one a kernel adds) is refused without being named. socketpair() only as AF_UNIX
  stream or seqpacket pairs (asyncio, multiprocessing): they cannot be re-connected elsewhere, while a
  datagram pair can send to any filesystem socket.
- io_uring: its operations open and connect sockets without passing through the filter. io_setup
  (Linux AIO, ENOSYS as io_uring's calls, so a library falls back to threads): its contexts count
  against one limit for the whole machine (`fs.aio-max-nr`, 65536 events), which one cell could hold
  while it runs, every other process's `io_setup` then failing (DeepSpeed's NVMe offload, databases).
- keyctl, add_key, request_key: the kernel keyring of the cell uid is shared by every cell.
- bpf, perf_event_open, userfaultfd: kernel attack surface no cell needs.
- memfd_secret: memory hidden even from the kernel's own accounting tools; no cell needs it.
- mmap with MAP_HUGETLB, memfd_create with MFD_HUGETLB (ENOMEM): pages of the machine's hugetlb pool,
  which no memory cgroup counts by default.
- sync, syncfs: answered as done without writing anything back (NO_OPS): the machine's whole writeback,
  which a cell calling them in a loop would keep everyone waiting on.
- a new RLIMIT_CORE (setrlimit, prlimit64): the cell's 1 makes the kernel abort every core dump, also
  to the host's pipe handler (RLIMIT_CORE below).
- acting on another process named by its pid: prlimit64, setpriority, ioprio_set, sched_setaffinity,
  sched_setscheduler, sched_setparam, sched_setattr, migrate_pages and move_pages are allowed on the
  caller only (pid 0; setpriority and ioprio_set never on a whole user). Without a PID namespace (the
  fallback where t3rl is not root and has no user namespaces) t3rl's own processes share the cell's
  uid: a cell could otherwise cut the launcher's open-file limit (no next cell could start), renice it,
  pin it to one CPU or make it SCHED_IDLE. Neither Landlock nor the uid covers these calls.
- inotify and fanotify: a watch on the system's files (readable by every cell) sees which files the
  cells running at the same time open and read: what another episode's code imports and does.
- On request (`install(refused)`): memfd_create (MEMFD) where no memory cgroup counts a cell's memory
  (the address-space limit does not count a memfd's pages once unmapped, or never mapped, so a cell
  could keep gigabytes in them), and SysV shmget, msgget, semget (SYSV_IPC) also where the cell has no
  IPC namespace of its own (its objects would outlive it). POSIX shared memory stays possible, inside
  the cell's size-capped /dev/shm. Likewise mq_open (MQUEUE) where the cell has no IPC namespace: a
  POSIX message queue outlives its cell in the host's namespace (created even where Landlock then
  refuses to open it), up to the host's `fs.mqueue.queues_max` (256) for every unprivileged user. And
  fcntl's F_SETPIPE_SZ (PIPE_SIZE) where cells keep t3rl's uid: pipe pages are counted per uid.

The system call numbers differ per architecture: x86-64 has its own table, aarch64 the generic one.
Elsewhere the layer is reported missing (with the machine's name) rather than guessed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import socket
from dataclasses import dataclass

from .libc import PR_SET_NO_NEW_PRIVS, prctl

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
X32_SYSCALL_BIT = 0x40000000
# classic BPF opcodes: load word at absolute offset, jumps on equal / greater-or-equal / bits set, and, return
LD_ABS, JEQ, JGE, JSET, AND, RET = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (low word first)
NR_OFFSET, ARCH_OFFSET = 0, 4
# Every CLONE_NEW* flag clone() accepts (CLONE_NEWTIME only exists for unshare and clone3).
NAMESPACE_FLAGS = 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
SOCK_TYPE_MASK = 0xF
# Address families a cell may open a socket of (an allow-list: anything else is refused).
ALLOWED_FAMILIES: tuple[int, ...] = ()
# socketpair() types allowed for AF_UNIX.
ALLOWED_PAIR_TYPES = (socket.SOCK_STREAM, socket.SOCK_SEQPACKET)

# From the kernel's arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h.
X86_64 = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "kcmp": 312,
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
    "memfd_create": 319,
    "memfd_secret": 447,
    "shmget": 29,
    "msgget": 68,
    "semget": 64,
    "mq_open": 240,
    "io_setup": 206,
    "inotify_init": 253,
    "inotify_init1": 294,
    "fanotify_init": 300,
    "prlimit64": 302,
    "setrlimit": 160,
    "setpriority": 141,
    "ioprio_set": 251,
    "sched_setaffinity": 203,
    "sched_setscheduler": 144,
    "sched_setparam": 142,
    "sched_setattr": 314,
    "migrate_pages": 256,
    "move_pages": 279,
    "sync": 162,
    "syncfs": 306,
    "mmap": 9,
    "fcntl": 72,
}
GENERIC = {
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "kcmp": 272,
    "unshare": 97,
    "setns": 268,
    "clone": 220,
    "clone3": 435,
    "socket": 198,
    "socketpair": 199,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "bpf": 280,
    "perf_event_open": 241,
    "userfaultfd": 282,
    "memfd_create": 279,
    "memfd_secret": 447,
    "shmget": 194,
    "msgget": 186,
    "semget": 190,
    "mq_open": 180,
    "io_setup": 0,
    "inotify_init1": 26,
    "fanotify_init": 262,
    "prlimit64": 261,
    "setrlimit": 164,
    "setpriority": 140,
    "ioprio_set": 30,
    "sched_setaffinity": 122,
    "sched_setscheduler": 119,
    "sched_setparam": 118,
    "sched_setattr": 274,
    "migrate_pages": 238,
    "move_pages": 239,
    "sync": 81,
    "syncfs": 267,
    "mmap": 222,
    "fcntl": 25,
}
ALWAYS_REFUSED = (
    *("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp"),
    *("unshare", "setns"),
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "memfd_secret"),
    *("inotify_init", "inotify_init1", "fanotify_init"),
)
# Refused where the cell's memory cgroup would not count what they hold (see the module docstring).
MEMFD = ("memfd_create",)
SYSV_IPC = ("shmget", "msgget", "semget")
MQUEUE = ("mq_open",)
# fcntl's F_SETPIPE_SZ (on request, where cells keep t3rl's uid): the pages of every pipe are counted per
# uid, whatever the namespace (`fs.pipe-user-pages-soft`, past which each new pipe of the uid gets two
# pages, t3rl's own included). A cell's pipes keep the kernel's default size; a program that asks for
# more gets EPERM, as an unprivileged process asking beyond `fs.pipe-max-size` does.
PIPE_SIZE = ("F_SETPIPE_SZ",)
F_SETPIPE_SZ = 1031
# Done without being done (success, nothing written back): sync() writes back every dirty page of every
# filesystem of the machine and waits for it, syncfs() those of the filesystem a descriptor is on (the
# host's, for a file a cell may read). A cell calling either in a loop stalls the I/O of the trainer's
# checkpoints and of every other process, which no cgroup of the cell's charges it for. A cell's own
# files live in its tmpfs, which has nothing to write back; fsync() of one file stays allowed.
NO_OPS = ("sync", "syncfs")
# Huge pages of the hugetlb pool (MAP_HUGETLB, MFD_HUGETLB): one pool for the whole machine, reserved by
# its administrator (nr_hugepages, often for the trainer, NCCL or DPDK), which no memory cgroup counts by
# default. A cell could take every free page while it runs. Refused with ENOMEM, what a pool without free
# pages answers, so a program falls back to ordinary pages; transparent huge pages stay (counted).
MAP_HUGETLB, MFD_HUGETLB = 0x40000, 0x4
NOT_IMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register", "io_setup")
# Calls on a process named by their first argument: allowed with 0 (the caller) only.
SELF_ONLY = (
    *("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr"),
    *("migrate_pages", "move_pages"),
)
# RLIMIT_CORE stays as the cell starts with it, 1 (privileges.set_limits): the kernel aborts a core dump
# to the host's pipe handler at exactly 1 (its guard against recursive dumps) and a file dump below a
# page. Lowered to 0, a crash (any exec'd child is dumpable again) would run the host's handler
# (systemd-coredump, apport) as root, storing the cell's memory outside its disk cap. prlimit64 is also
# allowed on the caller only (pid 0), as SELF_ONLY.
RLIMIT_CORE = 4
# Calls taking (which, who): allowed with who 0 only, and `which` never the value that names a user
# (PRIO_USER; IOPRIO_WHO_USER), whose 0 is the caller's uid: every process of it.
SELF_ONLY_WHO = {"setpriority": os.PRIO_USER, "ioprio_set": 3}


@dataclass(frozen=True)
class Arch:
    """What the filter needs to know of one architecture."""

    audit: int  # AUDIT_ARCH_* value the kernel puts in seccomp_data.arch
    numbers: dict[str, int]
    # x86-64 also accepts x32 system calls (numbers with X32_SYSCALL_BIT), which the table does not cover.
    has_x32: bool


# platform.machine() → its architecture; little-endian only (the audit values say so).
ARCHES = {
    "x86_64": Arch(audit=0xC000003E, numbers=X86_64, has_x32=True),
    "aarch64": Arch(audit=0xC00000B7, numbers=GENERIC, has_x32=False),
}


def arch_for(machine: str) -> Arch | None:
    """The filter's architecture for a `platform.machine()` string; None where there is no filter."""
    return ARCHES.get(machine)


def supported(machine: str | None = None) -> bool:
    return arch_for(machine or platform.machine()) is not None


def refusal() -> str | None:
    """Why this kernel refuses the filter (built without seccomp filters, a container that denies
    them), found by installing it in a throw-away child; None when it takes it."""
    pid = os.fork()
    if pid == 0:
        try:
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            install()
        except OSError as err:
            os._exit(err.errno or 1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return None if code == 0 else f"the kernel refused the filter ({os.strerror(code) if code > 0 else code})"


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


def program(arch: Arch, refused: tuple[str, ...] = ()) -> list[_Insn | str]:
    """The filter as instructions and labels (a label names the instruction that follows it)."""
    nr = arch.numbers
    prog: list[_Insn | str] = [
        _Insn(LD_ABS, ARCH_OFFSET),
        _Insn(JEQ, arch.audit, false="kill"),
        _Insn(LD_ABS, NR_OFFSET),
    ]
    if arch.has_x32:
        prog.append(_Insn(JGE, X32_SYSCALL_BIT, true="kill"))
    for name in ALWAYS_REFUSED + refused:
        if name in nr:  # the generic table has no inotify_init (only inotify_init1)
            prog.append(_Insn(JEQ, nr[name], true="eperm"))
    for name in NOT_IMPLEMENTED:
        prog.append(_Insn(JEQ, nr[name], true="enosys"))
    prog += [_Insn(JEQ, nr[name], true="noop") for name in NO_OPS]
    prog += [_Insn(JEQ, nr[name], true="self") for name in SELF_ONLY]
    prog += [_Insn(JEQ, nr["prlimit64"], true="prlimit"), _Insn(JEQ, nr["setrlimit"], true="setrlimit")]
    if PIPE_SIZE[0] in refused:
        prog.append(_Insn(JEQ, nr["fcntl"], true="fcntl"))
    prog += [_Insn(JEQ, nr[name], true=f"who {which}") for name, which in SELF_ONLY_WHO.items()]
    prog += [
        _Insn(JEQ, nr["mmap"], true="mmap"),
        _Insn(JEQ, nr["memfd_create"], true="memfd"),
        _Insn(JEQ, nr["clone"], true="clone"),
        _Insn(JEQ, nr["socket"], true="socket"),
        _Insn(JEQ, nr["socketpair"], true="socketpair"),
        _Insn(RET, RET_ALLOW),
        "self",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, 0, true="allow", false="eperm"),
        *[
            insn
            for which in sorted(set(SELF_ONLY_WHO.values()))
            for insn in (
                f"who {which}",
                _Insn(LD_ABS, _arg(1)),
                _Insn(JEQ, 0, false="eperm"),
                _Insn(LD_ABS, _arg(0)),
                _Insn(JEQ, which, true="eperm", false="allow"),
            )
        ],
        "prlimit",  # prlimit64(pid, resource, new, old): pid 0, and no new RLIMIT_CORE
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, 0, false="eperm"),
        _Insn(LD_ABS, _arg(1)),
        _Insn(JEQ, RLIMIT_CORE, false="allow"),
        _Insn(LD_ABS, _arg(2)),
        _Insn(JEQ, 0, false="eperm"),
        _Insn(LD_ABS, _arg(2) + 4),
        _Insn(JEQ, 0, true="allow", false="eperm"),
        "setrlimit",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, RLIMIT_CORE, true="eperm", false="allow"),
        "fcntl",  # fcntl(fd, cmd, arg): every command but F_SETPIPE_SZ (jumped to only where refused)
        _Insn(LD_ABS, _arg(1)),
        _Insn(JEQ, F_SETPIPE_SZ, true="eperm", false="allow"),
        "mmap",  # mmap(addr, length, prot, flags, fd, offset)
        _Insn(LD_ABS, _arg(3)),
        _Insn(JSET, MAP_HUGETLB, true="enomem", false="allow"),
        "memfd",  # memfd_create(name, flags), where it is not refused as a whole
        _Insn(LD_ABS, _arg(1)),
        _Insn(JSET, MFD_HUGETLB, true="enomem", false="allow"),
        "clone",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JSET, NAMESPACE_FLAGS, true="eperm"),
        _Insn(RET, RET_ALLOW),
        "socket",
        _Insn(LD_ABS, _arg(0)),
        *[_Insn(JEQ, family, true="allow") for family in ALLOWED_FAMILIES],
        _Insn(RET, _refuse(errno.EPERM)),
        "socketpair",
        _Insn(LD_ABS, _arg(0)),
        _Insn(JEQ, socket.AF_UNIX, false="eperm"),
        _Insn(LD_ABS, _arg(1)),
        _Insn(AND, SOCK_TYPE_MASK),
        *[_Insn(JEQ, kind, true="allow") for kind in ALLOWED_PAIR_TYPES],
        "eperm",
        _Insn(RET, _refuse(errno.EPERM)),
        "allow",
        _Insn(RET, RET_ALLOW),
        "enosys",
        _Insn(RET, _refuse(errno.ENOSYS)),
        "enomem",
        _Insn(RET, _refuse(errno.ENOMEM)),
        "noop",  # the call is skipped and returns 0
        _Insn(RET, _refuse(0)),
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


def install(refused: tuple[str, ...] = ()) -> None:
    """Apply the filter, refusing `refused` system calls too, to this process and its future children
    (needs no_new_privs or CAP_SYS_ADMIN)."""
    arch = arch_for(platform.machine())
    if arch is None:
        raise OSError(errno.ENOSYS, f"no seccomp filter for {platform.machine()}")
    code = assemble(program(arch, refused))
    filters = (_SockFilter * len(code))(*[_SockFilter(*row) for row in code])
    fprog = _SockFprog(len(code), filters)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog))
