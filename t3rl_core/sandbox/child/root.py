"""The zygote's root filesystem: only what a cell may see, each part bound at its own path.

Landlock refuses reads outside an allow-list; where the kernel has no Landlock (before 5.13) the host's
whole tree would stay visible to a cell, readable wherever file modes let its uid (world-readable run
directories, other users' data). With a mount namespace the zygote instead moves into a new root, an
empty tmpfs holding binds of the allowed trees only (the system, the interpreter, the project's code,
the cell's /etc view, /proc, the private /tmp and /dev/shm), and detaches the host's tree: what is not
listed does not exist for a cell, whatever the kernel.
"""

from __future__ import annotations

import os

from .libc import MNT_DETACH, mount, pivot_root, umount2
from .mounts import MS_BIND, MS_NODEV, MS_NOSUID, MS_REC, STAGING, below, make_dirs

# Assembled inside the zygote's private /run (a tmpfs only it sees), then made the root.
NEW_ROOT = "/run/t3rl-root"
_OLD = "/.host"


def pivot_to(shown: list[str]) -> None:
    """Make a root of `shown` (files or directories, symbolic links kept as links) and enter it."""
    os.mkdir(NEW_ROOT, 0o755)
    mount("tmpfs", NEW_ROOT, MS_NOSUID | MS_NODEV, "tmpfs", "size=1m,mode=0755")
    bound: list[str] = []
    for path in sorted({os.path.abspath(p) for p in shown}, key=len):
        if os.path.lexists(path):
            _links_on_the_way(path)
            _bind(os.path.realpath(path), bound)
    make_dirs(STAGING, NEW_ROOT)  # where each cell assembles its own tmpfs (not the zygote's /run)
    make_dirs(_OLD, NEW_ROOT)
    pivot_root(NEW_ROOT, NEW_ROOT + _OLD)
    os.chdir("/")
    umount2(_OLD, MNT_DETACH)
    os.rmdir(_OLD)


def _links_on_the_way(path: str) -> None:
    """Recreate the symbolic links among `path` and its parents (/lib → usr/lib, a venv's python)."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        copy = NEW_ROOT + current
        if os.path.islink(current) and not os.path.lexists(copy):
            make_dirs(os.path.dirname(current), NEW_ROOT)
            os.symlink(os.readlink(current), copy)
            _links_on_the_way(os.path.realpath(current))


def _bind(real: str, bound: list[str]) -> None:
    """Bind `real` (no links in it) at its own path, unless a tree bound before holds it already
    (creating its mount point there would write into the host's tree)."""
    if real in bound or any(below(real, tree) for tree in bound) or not os.path.exists(real):
        return
    if os.path.isdir(real):
        make_dirs(real, NEW_ROOT)
    else:
        make_dirs(os.path.dirname(real), NEW_ROOT)
        os.close(os.open(NEW_ROOT + real, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(real, NEW_ROOT + real, MS_BIND | MS_REC)
    bound.append(real)
