"""The filesystem a cell sees, built in two steps inside private mount namespaces.

Once per zygote: every mount made private, empty tmpfs mounts over the places where other programs
keep sockets and scratch files (`/tmp`, `/run`, `/var/tmp`, `/dev/shm`, configured extras), the
hidden credential paths covered, /etc replaced by the cell's own view, then (`root.pivot_to`) a new
root holding only what cells may read, every mount of it read-only. Per cell (in its own mount
namespace, a copy of the zygote's): one size-capped tmpfs owned by the cell's uid, shown at `/tmp`
and `/dev/shm`, the only writable places, and a `/proc` of the cell's own PID namespace.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .libc import mount

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_MOVE, MS_REC = 1024, 2048, 4096, 8192, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
# Flags a bind remount has to repeat: the kernel refuses to clear them (they are locked in user
# namespaces), and statvfs reports them under other bit values than mount(2) takes.
KEPT_FLAGS = {
    os.ST_NOSUID: MS_NOSUID,
    os.ST_NODEV: MS_NODEV,
    os.ST_NOEXEC: MS_NOEXEC,
    os.ST_NOATIME: MS_NOATIME,
    os.ST_NODIRATIME: MS_NODIRATIME,
    os.ST_RELATIME: MS_RELATIME,
}
CELL_DIR, SHM_DIR = "/tmp", "/dev/shm"
# Where a cell's tmpfs is assembled before its parts are bound into place (then covered by an empty one).
STAGING = "/run"
# Inodes of the cell's tmpfs: plenty for real work, a bound on a cell creating millions of empty files.
CELL_INODES = 65536
# The empty tmpfs that covers a private directory, a hidden one or a directory closed to other users.
COVER_FLAGS = MS_NOSUID | MS_NODEV | MS_NOEXEC
COVER_OPTIONS = "size=64k,mode=0755"
ETC = "/etc"
# What a cell sees of the host's /etc: the dynamic loader's files and the time zone (a link into
# /usr/share/zoneinfo, shown as the file it points at). Missing ones are skipped.
ETC_SHOWN = ("/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime")
# Written into the cell's /etc instead of the host's: only root and the cell's own user.
ETC_WRITTEN = ("/etc/passwd", "/etc/group")


@dataclass(frozen=True)
class EtcView:
    """The cell's /etc: `shown` host paths below /etc (files or directories, e.g. a `readable_paths`
    entry such as /etc/ssl/certs), and passwd/group naming root and the cell's `uid`/`gid` only."""

    shown: list[str]
    uid: int
    gid: int

    def written(self) -> dict[str, str]:
        users = {0: "root", self.uid: "cell"}
        groups = {0: "root", self.gid: "cell"}
        return {
            "/etc/passwd": "".join(
                f"{name}:x:{uid}:{uid}:{name}:/tmp:/usr/sbin/nologin\n" for uid, name in users.items()
            ),
            "/etc/group": "".join(f"{name}:x:{gid}:\n" for gid, name in groups.items()),
        }


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in points]


def prepare_zygote_root(
    private_dirs: list[str], hidden: list[str], kept: list[str], etc: EtcView, *, closed: bool
) -> list[str]:
    """Private empty directories (the `kept` trees bound back through them, see `cover`), hidden
    credentials, /etc reduced to `etc`. Returns the kept trees each cell binds again over its own /tmp
    and /dev/shm (a checkout or venv under /tmp)."""
    mount(None, "/", MS_REC | MS_PRIVATE)
    bound = cover([CELL_DIR, *private_dirs], kept, closed=closed)
    for path in hidden:
        if os.path.isdir(path):
            mount("tmpfs", path, COVER_FLAGS, "tmpfs", COVER_OPTIONS)
        elif os.path.exists(path):
            mount(os.devnull, path, MS_BIND)
    show_only(ETC, etc.shown, etc.written())
    return [tree for tree in bound if any(below(tree, d) for d in (CELL_DIR, SHM_DIR))]


def remount_read_only() -> None:
    """Every mount of this namespace read-only, each keeping the flags it has."""
    for point in _mount_points():
        try:
            kept_flags = os.statvfs(point).f_flag
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            flags |= sum(ms for st, ms in KEPT_FLAGS.items() if kept_flags & st)
            mount(None, point, flags)
        except OSError:
            # Over-mounted or vanished mounts cannot be reached; the root itself must succeed.
            if point == "/":
                raise


def below(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    """The existing directories among `paths` (resolved), without those inside another one."""
    real = sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})
    return [p for p in real if not any(below(p, q) for q in real)]


def _closed_ancestor(path: str) -> str | None:
    """The topmost directory above `path` that other users may not traverse (no o+x), if any."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:depth])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def cover(dirs: list[str], keep: list[str], *, closed: bool, options: str = COVER_OPTIONS) -> list[str]:
    """Cover each of `dirs` with an empty tmpfs while every tree of `keep` (the interpreter, the venv,
    the project) stays visible at its own path, wherever it lives (a venv under /tmp on a cluster node).

    A kept tree below a covered directory is bound back onto the cover, with its own mount's flags
    (read-only once the whole tree is remounted so). With `closed`, a directory above a kept tree that
    other users may not traverse (pyenv under a 0700 /root, for a cell uid that is not its owner) is
    covered the same way, so only the kept trees of it show through. Returns the trees bound back.
    """
    covers = _outermost(dirs)
    trees = _outermost(keep)
    hidden_by: dict[str, str] = {}
    for tree in trees:
        above = [c for c in covers if below(tree, c)]
        ancestor = _closed_ancestor(tree) if closed else None
        if ancestor is not None:
            above.append(ancestor)
        if above:
            hidden_by[tree] = min(above, key=len)
    # Held open across the covering: the bind source is reached through the descriptor afterwards.
    held = {tree: os.open(tree, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for tree in hidden_by}
    try:
        for target in sorted({*covers, *hidden_by.values()}, key=len):
            if os.path.isdir(target):  # not inside a directory covered just before
                mount("tmpfs", target, COVER_FLAGS, "tmpfs", options if target in covers else COVER_OPTIONS)
        for tree, fd in held.items():
            make_dirs(tree)
            mount(f"/proc/self/fd/{fd}", tree, MS_BIND | MS_REC)
    finally:
        for fd in held.values():
            os.close(fd)
    # A directory to cover that lies inside a tree just bound back is visible again.
    for path in _outermost(dirs):
        if any(below(path, tree) for tree in held):
            mount("tmpfs", path, COVER_FLAGS, "tmpfs", options)
    return sorted(held)


def show_only(directory: str, shown: list[str], written: dict[str, str]) -> None:
    """Cover `directory` with an empty tmpfs, bind back the `shown` paths below it (links resolved: a
    file or directory each) and write the `written` files (path → text) into it."""
    held = {}
    try:
        for path in shown:
            if below(path, directory) and os.path.exists(path):
                held[path] = os.open(os.path.realpath(path), os.O_PATH | os.O_CLOEXEC)
        mount("tmpfs", directory, COVER_FLAGS, "tmpfs", COVER_OPTIONS)
        for path, fd in held.items():
            make_dirs(os.path.dirname(path))
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                make_dirs(path)
            else:
                _write(path, "")
            mount(f"/proc/self/fd/{fd}", path, MS_BIND | MS_REC)
    finally:
        for fd in held.values():
            os.close(fd)
    for path, text in written.items():
        _write(path, text)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)


def make_dirs(path: str, root: str = "/") -> None:
    """`path` (absolute) below `root`, each missing level 0755 whatever the umask (the cell uid must
    traverse them)."""
    current = root
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if not os.path.isdir(current):
            os.mkdir(current)
            os.chmod(current, 0o755)


def mount_cell_dir(size_bytes: int, uid: int, gid: int, kept: list[str]) -> None:
    """The cell's writable places, /tmp and /dev/shm (multiprocessing's semaphores live there), both
    parts of one fresh tmpfs whose size is the cell's total disk allowance; `kept` trees below them
    (bound in the zygote's mount namespace, still visible here) are bound into the parts first."""
    options = f"size={size_bytes},nr_inodes={CELL_INODES},mode=0700"
    mount("tmpfs", STAGING, MS_NOSUID | MS_NODEV, "tmpfs", options)
    for part, target in (("cell", CELL_DIR), ("shm", SHM_DIR)):
        if not os.path.isdir(target):
            continue
        staged = f"{STAGING}/{part}"
        os.mkdir(staged, 0o700)
        os.chown(staged, uid, gid)
        for tree in kept:
            if below(tree, target):
                inside = tree[len(target.rstrip("/")) :]
                make_dirs(inside, staged)
                mount(tree, staged + inside, MS_BIND | MS_REC)
        mount(staged, target, MS_BIND | MS_REC)
    # Covered again by an empty tmpfs rather than unmounted: an unmount waits for an RCU grace period.
    mount("tmpfs", STAGING, MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "tmpfs", "size=4k,mode=0755")


# What a cell may learn of its host through /proc, declared: a /proc of the cell's own PID namespace
# filters processes, not the kernel's host-wide files, so each entry of /proc's top level a cell may read
# is named here with why; every other one (a file, or a directory of them) is covered, whatever the
# kernel adds: a file by /dev/null, a directory by an empty read-only tmpfs. Covered so: the kernel's
# command line (a VM's boot parameters can carry a provisioning token), build configuration, modules and
# their symbols (`kallsyms`); the host's users by uid with their keys' counts; its devices, interrupts,
# disks, swap, consoles; and every counter of the host's activity (`vmstat`, `zoneinfo`, `buddyinfo`,
# `pagetypeinfo`, `schedstat`, the pressure of every process on its CPUs, memory and I/O, a
# filesystem's statistics under `fs`): how hard the trainer and the other cells work, sampled as they
# run, and a channel between two cells. What programs size themselves by stays (`cpuinfo`, `meminfo`,
# `stat`, `loadavg`); the process's own entries (`self`, `thread-self`, `mounts`, `net`, a pid's
# directory) show the cell's own namespaces.
PROC_KEPT: dict[str, str] = {
    "self": "the process's own directory",
    "thread-self": "the thread's own directory",
    "mounts": "a link to self/mounts: the cell's own mount namespace",
    "net": "a link to self/net: the cell's own network namespace, empty",
    "sys": "the kernel's settings programs read (`vm/overcommit_memory`, `kernel/pid_max`); its host-wide "
    "counters are in PROC_SYS_COVERED",
    "sysvipc": "the cell's own IPC namespace's objects",
    "locks": "the locks of the cell's own PID namespace",
    "cpuinfo": "the CPUs' model and count: libraries size their thread pools by it",
    "meminfo": "the memory's size: `psutil.virtual_memory`, allocators",
    "stat": "the CPUs' times (`psutil.cpu_percent`) and the boot time; sysinfo(2) tells the same",
    "loadavg": "`os.getloadavg`; sysinfo(2) tells the same, and no namespace filters it",
    "uptime": "sysinfo(2) tells it; a time namespace would shift it, and hand the shift back in "
    "/proc/self/timens_offsets",
    "version": "the kernel's release, which uname(2) tells (no namespace hides it)",
    "filesystems": "the kinds of filesystem the kernel knows: static, read by `mount` and libraries",
}
# Host-wide counters under /proc/sys (which stays for the settings) covered the same way: the boot's
# identity (the same in every cell of every run: a cell could tell which cells share its host), the
# entropy pool's level and the host's open files, inodes, dentries and asynchronous I/O in flight (each
# moves with the other processes' work).
PROC_SYS_COVERED = (
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/kernel/random/entropy_avail",
    "/proc/sys/fs/file-nr",
    "/proc/sys/fs/inode-nr",
    "/proc/sys/fs/inode-state",
    "/proc/sys/fs/dentry-state",
    "/proc/sys/fs/aio-nr",
)


# What a cell may read of /sys is the CPU and NUMA topology (`zygote.SYSTEM_READABLE`: what OpenBLAS, hwloc
# and `os.cpu_count` size themselves by: `online`, `cpu*/topology`, `cpu*/cache`, `node*/cpulist`). Its
# files that count the host's activity rather than describe its hardware are covered in the zygote's
# root, by their names: a node's page and NUMA-allocation counters (`vmstat`, `numastat`: the same as
# /proc/vmstat's, per node) and each CPU's idle states' entries and residency (`usage`, `time`, `above`,
# `below`, `rejected`: how busy the trainer and the other cells keep each core); and the directory of the
# CPU's vulnerabilities and their mitigations (`vulnerabilities`: the host's security posture, a guide to
# attacking it), covered by an empty read-only tmpfs.
SYS_TOPOLOGY = ("/sys/devices/system/cpu", "/sys/devices/system/node")
SYS_COVERED_FILES = frozenset({"vmstat", "numastat", "usage", "time", "above", "below", "rejected"})
SYS_COVERED_DIRS = frozenset({"vulnerabilities"})


def cover_sys_counters() -> None:
    """Cover `SYS_COVERED_FILES` and `SYS_COVERED_DIRS` below `SYS_TOPOLOGY` (call in the zygote's new
    root, before it is made read-only)."""
    for tree in SYS_TOPOLOGY:
        for directory, subdirectories, files in os.walk(tree):
            for name in [d for d in subdirectories if d in SYS_COVERED_DIRS]:
                mount(
                    "tmpfs",
                    f"{directory}/{name}",
                    MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    "tmpfs",
                    "size=4k,mode=0555",
                )
                subdirectories.remove(name)
            for name in files:
                if name in SYS_COVERED_FILES:
                    mount(os.devnull, f"{directory}/{name}", MS_BIND)


def mount_proc() -> None:
    """A /proc showing only the cell's PID namespace (call as its PID 1): of its top level only
    `PROC_KEPT` and the processes' directories, less `PROC_SYS_COVERED`."""
    mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc")
    for name in os.listdir("/proc"):
        path = f"/proc/{name}"
        if name in PROC_KEPT or name.isdigit() or os.path.islink(path):
            continue
        if os.path.isdir(path):
            mount("tmpfs", path, MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "tmpfs", "size=4k,mode=0555")
        else:
            mount(os.devnull, path, MS_BIND)
    for path in PROC_SYS_COVERED:
        if os.path.exists(path):
            mount(os.devnull, path, MS_BIND)


# The files wave eight covered by name, each covered now by `PROC_KEPT` leaving it out (or by
# `PROC_SYS_COVERED`): kept as the list the tests of that wave read.
PROC_COVERED = (
    "/proc/cmdline",
    "/proc/bootconfig",
    "/proc/config.gz",
    "/proc/modules",
    "/proc/key-users",
    "/proc/keys",
    "/proc/sys/kernel/random/boot_id",
    "/proc/interrupts",
    "/proc/softirqs",
    "/proc/diskstats",
    "/proc/partitions",
    "/proc/swaps",
    "/proc/pressure/cpu",
    "/proc/pressure/memory",
    "/proc/pressure/io",
    "/proc/pressure/irq",
)
