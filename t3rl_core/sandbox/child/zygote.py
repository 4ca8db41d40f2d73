"""The zygote: one long-lived, pre-isolated interpreter per sandbox that forks a fresh cell per request.

Starting an interpreter costs ~30 ms of CPU (most of it `site`); forking this one costs well under
a millisecond, and every cell still starts from the same pristine state (the zygote never runs cell
code). The zygote enters its network, mount, IPC and UTS namespaces once (a user namespace too when
t3rl is not root), moves into a read-only root of what cells may read (the system, the interpreter, the
project's code, its own /etc, private empty /tmp and /dev/shm), then answers requests on its control
socket: a JSON spec with the cell's pipes attached (SCM_RIGHTS). The next cell's
namespaces and init are always prepared before its request arrives (see `cell.py`).
t3rl keeps one zygote per concurrent cell, each in its own pids cgroup, which its cells are born in.

Started by `t3rl_core.sandbox.zygote_process` as `python -I -B -X utf8 -c <bootstrap> <control fd>`; the
spec comes as the first message on the control socket.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import json
import os
import platform
import signal
import socket
import sys

from . import cell, landlock, mounts, privileges, root, seccomp
from .libc import (
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    PR_SET_CHILD_SUBREAPER,
    prctl,
    unshare,
)

# The system a Python program reads: programs and libraries, the few host files a program needs (the
# loader's cache, the time zone, the CPU topology OpenBLAS and os.cpu_count() read) and harmless
# devices. Not the rest of /etc (users, hosts, package-index credentials), nor of /sys; /proc is added
# per cell (`cell.proc_readable`).
SYSTEM_READABLE = (
    *("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"),
    *mounts.ETC_SHOWN,
    *mounts.SYS_TOPOLOGY,
    *("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"),
)

# The host name cells see (their own UTS namespace).
HOSTNAME = "sandbox"
# Besides the readable paths, the zygote's root holds /proc (each cell mounts its own over it) and the
# private /tmp and /dev/shm (each cell's own tmpfs goes there).
PROC_AND_PRIVATE = ("/proc", mounts.CELL_DIR, mounts.SHM_DIR)
# Largest spec t3rl sends (its paths lists); one datagram of the control socket.
SPEC_BYTES = 1 << 20

# Files that make a directory a project checkout rather than an installed tree.
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def _enter_namespaces(spec: dict, readable: list[str]) -> list[str] | None:
    """Own network, mount, IPC and UTS namespaces (and a user namespace when not root), in a root that
    holds the `readable` paths only; None if refused, else the trees each cell binds back over its own
    /tmp and /dev/shm (see `mounts.cover`). The IPC namespace keeps cells away from the host's SysV
    shared memory, semaphores and queues."""
    as_root = os.geteuid() == 0
    uid, gid = os.geteuid(), os.getegid()
    if not as_root:
        # Cells keep the invoking uid, t3rl's own: what they queue is counted against it too, up to the
        # limit the namespace is made with.
        privileges.cap_pending_signals()
        privileges.cap_queue_bytes()
    try:
        unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | (0 if as_root else CLONE_NEWUSER))
    except OSError:
        return None
    # Its cells' /proc/self/cgroup shows "/", not the host's layout (a container's id, t3rl's pid in the
    # slot's name). On its own: a kernel without cgroup namespaces (before 4.6) keeps the rest.
    with contextlib.suppress(OSError):
        unshare(CLONE_NEWCGROUP)
    socket.sethostname(HOSTNAME)  # the host's name (a cluster's, a company's node naming) is not the cells'
    if not as_root:
        # The only id a user namespace may map without a setuid helper is our own: it becomes root inside.
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    # Everything the interpreter runs and imports from stays visible wherever it lives (under /tmp
    # too); a cell uid that is not their owner also needs a way through closed directories above them.
    # A checkout among them (under /tmp, it becomes part of each cell's own /tmp) only through its code.
    kept = [part for tree in [*_interpreter_trees(), *spec["visible"]] for part in _code_of(tree)]
    etc = mounts.EtcView(shown=[*mounts.ETC_SHOWN, *spec["readable_paths"]], uid=spec["uid"], gid=spec["gid"])
    under_tmp = mounts.prepare_zygote_root(spec["private_dirs"], spec["hidden"], kept, etc, closed=as_root)
    root.pivot_to([*readable, mounts.ETC, *PROC_AND_PRIVATE])
    mounts.cover_sys_counters()
    mounts.remount_read_only()
    _list_import_paths()
    return under_tmp


def _list_import_paths() -> None:
    """The import system lists each sys.path directory once, and lists it again when its mtime changes:
    directories of the new root (a checkout's, holding only its packages) are new. Listed here, where
    nothing refuses it, every cell inherits the listings (Landlock does not let a cell list a checkout
    on sys.path, only read its packages)."""
    importlib.invalidate_caches()
    importlib.machinery.PathFinder.find_spec("_t3rl_no_such_module")  # each entry is listed looking


def _interpreter_trees() -> list[str]:
    """What the interpreter runs and imports from (and the libraries a cell's environment points at)."""
    libraries = os.environ.get("LD_LIBRARY_PATH", "").split(":")
    executable = os.path.dirname(os.path.realpath(sys.executable))
    # A relative entry (".", "lib") is the loader's, against a cell's own directory; here it would be
    # taken against the zygote's working directory, "/": the whole filesystem.
    return [p for p in (sys.base_prefix, sys.prefix, executable, *sys.path, *libraries) if os.path.isabs(p)]


def readable_paths() -> list[str]:
    """What a cell may read (Landlock), besides its own directories: the system, the interpreter's trees
    and the harmless devices; nothing else of the host (the project, run directories, homes)."""
    trees = (part for tree in _interpreter_trees() for part in _code_of(tree))
    return [*SYSTEM_READABLE, *_all_but("/usr", USR_CONFIG), *trees]


# Host configuration kept below /usr, which a cell reads no more than /etc.
USR_CONFIG = ("/usr/etc", "/usr/local/etc")


def _all_but(tree: str, left_out: tuple[str, ...]) -> list[str]:
    """`tree` as the directories and files that make it up, less `left_out` (below it)."""
    if not any(mounts.below(path, tree) for path in left_out):
        return [tree]
    try:
        names = os.listdir(tree)
    except OSError:
        return [tree]
    parts = [os.path.join(tree, name) for name in names]
    return [part for path in parts if path not in left_out for part in _all_but(path, left_out)]


def _code_of(tree: str) -> list[str]:
    """A project checkout (t3rl's own, or one an editable install's .pth file puts on sys.path) holds
    run directories, data and .git besides its code: only its top-level packages and modules (a venv
    inside it is a tree of the interpreter's own). Any other tree whole."""
    try:
        if not any(os.path.exists(os.path.join(tree, marker)) for marker in PROJECT_MARKERS):
            return [tree]
        names = os.listdir(tree)
    except OSError:
        return [tree]
    return [
        path
        for path in (os.path.join(tree, name) for name in names)
        if os.path.isfile(os.path.join(path, "__init__.py")) or path.endswith((".py", ".pth", ".so"))
    ]


def configure(spec: dict) -> dict:
    """Set up this process and work out what each cell will apply; the result goes back to t3rl."""
    wanted = spec["isolation"] != "none"
    host_root = os.geteuid() == 0
    # Found on the host's tree, before the zygote's root holds only these.
    readable = [*readable_paths(), *spec["readable_paths"]]
    kept = _enter_namespaces(spec, readable) if wanted and spec["try_namespaces"] else None
    namespaces = kept is not None
    cell_spec = {
        **spec,
        "namespaces": namespaces,
        "kept": kept or [],
        "drop_privileges": wanted,
        # A root host drops the cell to the configured uid; in a user namespace there is no other id
        # to become, and the cell runs as the (unprivileged) user that started t3rl.
        "setuid": wanted and host_root,
        "landlock_abi": landlock.abi_version() if wanted else 0,
        # The passwd and group files exist only as the zygote wrote them into its own /etc.
        "readable": [*readable, *(mounts.ETC_WRITTEN if namespaces else ())],
        "machine": platform.machine(),
        "seccomp_refused": seccomp.refusal() if wanted and seccomp.supported() else None,
    }
    cell_spec["seccomp"] = wanted and seccomp.supported() and cell_spec["seccomp_refused"] is None
    if not cell_spec["setuid"]:
        # The cell keeps this process's ids: root of the user namespace, or the invoking user without one.
        cell_spec["uid"], cell_spec["gid"] = (0, 0) if namespaces else (os.geteuid(), os.getegid())
    return cell_spec


def serve(ctl: socket.socket, spec: dict) -> None:
    """Keep one cell prepared: fork its starter, wait until its init took a request, repeat; stop
    when an init reports nothing (t3rl closed the control socket)."""
    # Cells' init processes are re-parented here when their starter exits, and reaped automatically.
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    while True:
        taken_r, taken_w = os.pipe()
        if cell.fork_patiently(spec["patience_s"]) == 0:
            os.close(taken_r)
            cell.prepare(spec, ctl, taken_w)
        os.close(taken_w)
        took = os.read(taken_r, 1)
        os.close(taken_r)
        if not took:
            return


def main() -> None:
    # The spec comes over the control socket, not the command line: every cell's init is a fork of this
    # process, and its /proc/<pid>/cmdline (and each cell's sys.argv) would show the host's layout.
    ctl = socket.socket(fileno=int(sys.argv[1]))
    del sys.argv[1:]
    spec = json.loads(ctl.recv(SPEC_BYTES))
    try:
        for fd in spec.pop("cgroup_fds"):
            os.write(fd, b"0")
            os.close(fd)
        if spec["memory_cgroup"]:
            # The kernel picks what to kill at the slot's memory limit: never this zygote nor the
            # cells' inits, which inherit the score (root may say so); a cell raises its own to be first.
            privileges.set_oom_score_adj(privileges.OOM_NEVER)
        cell_spec = configure(spec)
        for module in spec["preload"]:
            __import__(module)
        spec.clear()  # all of it is in cell_spec, which each cell clears before its code runs
    except Exception as err:
        ctl.send(json.dumps({"error": f"{type(err).__name__}: {err}"}).encode())
        return
    ctl.send(json.dumps(cell_spec).encode())
    serve(ctl, cell_spec)
