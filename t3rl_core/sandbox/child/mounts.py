"""The filesystem a cell sees, built in two steps inside private mount namespaces.

Once per zygote: every mount made private, empty tmpfs mounts over the places where other programs
keep sockets and scratch files (`/tmp`, `/run`, `/var/tmp`, `/dev/shm`, configured extras), the
hidden credential paths covered, then every mount remounted read-only. Per cell (in its own mount
namespace, a copy of the zygote's): one size-capped tmpfs owned by the cell's uid, shown at `/tmp`
and `/dev/shm`, the only writable places, and a `/proc` of the cell's own PID namespace.
"""

from __future__ import annotations

import os
import re

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


def _mount_points() -> list[str]:
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return [re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), p) for p in points]


def prepare_zygote_root(private_dirs: list[str], hidden: list[str], exposed: list[str]) -> None:
    """Private empty directories, hidden credentials, the `exposed` trees made reachable for the cell
    uid (see `expose`), then the whole tree read-only."""
    mount(None, "/", MS_REC | MS_PRIVATE)
    # CELL_DIR first: it is covered anyway, and `expose` parks its bind mounts there.
    mount("tmpfs", CELL_DIR, MS_NOSUID | MS_NODEV | MS_NOEXEC, "tmpfs", "size=64k,mode=0700")
    if exposed:
        expose(exposed)
    covered = {os.path.realpath(CELL_DIR)}
    for path in private_dirs:
        real = os.path.realpath(path)
        if real not in covered and os.path.isdir(real):
            covered.add(real)
            mount("tmpfs", real, MS_NOSUID | MS_NODEV | MS_NOEXEC, "tmpfs", "size=4k,mode=0755")
    for path in hidden:
        if os.path.isdir(path):
            mount("tmpfs", path, MS_NOSUID | MS_NODEV | MS_NOEXEC, "tmpfs", "size=4k,mode=0755")
        elif os.path.exists(path):
            mount(os.devnull, path, MS_BIND)
    for point in _mount_points():
        try:
            kept = os.statvfs(point).f_flag
            flags = MS_REMOUNT | MS_BIND | MS_RDONLY
            flags |= sum(ms for st, ms in KEPT_FLAGS.items() if kept & st)
            mount(None, point, flags)
        except OSError:
            # Over-mounted or vanished mounts cannot be reached; the root itself must succeed.
            if point == "/":
                raise


def _closed_ancestor(path: str) -> str | None:
    """The topmost directory above `path` that other users may not traverse (no o+x), if any."""
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        ancestor = "/" + "/".join(parts[:depth])
        if not os.stat(ancestor).st_mode & 0o001:
            return ancestor
    return None


def expose(paths: list[str]) -> None:
    """Make each of `paths` reachable for an unprivileged cell uid without opening anything else.

    The interpreter may live below a directory closed to other users (pyenv under /root, a conda in a
    0700 home). Such a directory is covered by an empty tmpfs, and only the needed trees are bound
    back at their own paths, so the rest of that home stays out of sight.
    """
    wanted = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    by_ancestor: dict[str, list[str]] = {}
    for path in wanted:
        ancestor = _closed_ancestor(path)
        if ancestor is not None and not any(path.startswith(p + "/") for p in by_ancestor.get(ancestor, [])):
            by_ancestor.setdefault(ancestor, []).append(path)
    for n, (ancestor, trees) in enumerate(by_ancestor.items()):
        parked = []
        for m, tree in enumerate(trees):
            spot = os.path.join(CELL_DIR, f"expose-{n}-{m}")
            os.mkdir(spot)
            mount(tree, spot, MS_BIND | MS_REC)
            parked.append((spot, tree))
        mount("tmpfs", ancestor, MS_NOSUID | MS_NODEV, "tmpfs", "size=64k,mode=0755")
        for spot, tree in parked:
            os.makedirs(tree, mode=0o755)
            mount(spot, tree, MS_MOVE)


def mount_cell_dir(size_bytes: int, uid: int, gid: int) -> None:
    """The cell's writable places, /tmp and /dev/shm (multiprocessing's semaphores live there), both
    parts of one fresh tmpfs whose size is the cell's total disk allowance."""
    options = f"size={size_bytes},nr_inodes={CELL_INODES},mode=0700"
    mount("tmpfs", STAGING, MS_NOSUID | MS_NODEV, "tmpfs", options)
    for part, target in (("cell", CELL_DIR), ("shm", SHM_DIR)):
        if not os.path.isdir(target):
            continue
        os.mkdir(f"{STAGING}/{part}", 0o700)
        os.chown(f"{STAGING}/{part}", uid, gid)
        mount(f"{STAGING}/{part}", target, MS_BIND)
    # Covered again by an empty tmpfs rather than unmounted: an unmount waits for an RCU grace period.
    mount("tmpfs", STAGING, MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "tmpfs", "size=4k,mode=0755")


def mount_proc() -> None:
    """A /proc showing only the cell's PID namespace (call as its PID 1)."""
    mount("proc", "/proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "proc")
