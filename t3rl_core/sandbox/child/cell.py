"""One cell, forked from the zygote: its three processes and the confinement it applies to itself.

    zygote ─fork→ starter ─unshare(mount, PID, IPC), tmpfs, fork→ init (PID 1) ─request, fork→ cell
                  (exits)                                       waits, reports    confines itself, runs

All of it up to the request happens ahead of time: the starter enters a fresh mount, PID and IPC
namespace; init (PID 1 of that PID namespace, still privileged) mounts /proc and waits on the
control socket for t3rl's next request, tells the zygote it took one (the zygote then prepares the
next cell), closes the socket, reads the source and forks the cell. It then waits for the cell or for
t3rl to drop the lifeline, whichever comes first; when init exits the kernel kills every process
left in the namespace. The cell drops to the unprivileged uid, sets no_new_privs, Landlock and
seccomp, then runs the source.

Wire format (all pipes t3rl made and passed through the zygote): the lifeline carries an 8-byte
length and the source, then stays open as long as t3rl wants the cell alive. The status pipe gets
JSON lines: first {"applied": [layers]} from the cell, then {"exit": n} or {"signal": n, "cpu_s": t}
(the CPU time it used) from init, or {"setup_error": "..."} from whichever step failed.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import time
import types
from dataclasses import dataclass
from types import TracebackType

from . import ipc, landlock, mounts, privileges, seccomp
from .libc import CLONE_NEWIPC, CLONE_NEWNS, CLONE_NEWPID, PR_SET_CHILD_SUBREAPER, prctl, unshare

CELL_FILENAME = "<cell>"
# Frames of an uncaught exception's traceback printed, the last ones (the interpreter's default limit).
TRACEBACK_FRAMES = 1000
_C_LONG = 1 << 63
# Generators a module seeds once, when the zygote preloads it, which every cell forked from the zygote
# would then share (Python's own `random` reseeds itself in a forked child): module → its reseeding call
# (from the system's entropy), as a fresh `python -c` starts with a fresh seed.
RESEEDED_AFTER_FORK = {"numpy.random": "seed"}


@dataclass(frozen=True)
class Pipes:
    lifeline: int
    stdout: int
    stderr: int
    status: int


def prepare(spec: dict, ctl: socket.socket, taken: int) -> None:
    """The starter (a fresh child of the zygote): build the next cell's namespaces and its init ahead
    of any request, so a request only costs the cell's own fork. Never returns."""
    try:
        if spec["namespaces"]:
            # Own SysV IPC and POSIX message queues too: no rendezvous with other cells through them.
            unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
            mounts.mount_cell_dir(spec["disk_bytes"], spec["uid"], spec["gid"], spec["kept"])
            workdir = mounts.CELL_DIR
        else:
            workdir = os.path.join(spec["workdir_root"], f"cell-{os.getpid()}")
            os.mkdir(workdir, 0o700)
            if spec["setuid"]:
                os.chown(workdir, spec["uid"], spec["gid"])
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if fork_patiently(spec["patience_s"]) == 0:
            _init(spec, ctl, taken, workdir)
    except BaseException as err:
        _fail_next_request(ctl, taken, err)
    os._exit(0)


def fork_patiently(patience_s: float, lifeline: int | None = None) -> int:
    """os.fork(), retried with backoff while the slot's process limit is reached: the processes of the
    cell before (a fork bomb fills the limit) are still being torn down. Gives up after `patience_s`,
    or as soon as t3rl drops the `lifeline` (it no longer waits for this cell)."""
    give_up = time.monotonic() + patience_s
    delay = 0.001
    watch = select.poll()
    if lifeline is not None:
        watch.register(lifeline, select.POLLIN)
    while True:
        try:
            return os.fork()
        except BlockingIOError:
            if time.monotonic() + delay > give_up:
                raise
        if watch.poll(delay * 1000):  # only a hang-up: the source was read whole before
            raise BlockingIOError("t3rl gave up on the cell while the process limit was still reached")
        delay = min(delay * 2, 0.1)


def _take_request(ctl: socket.socket, taken: int) -> Pipes:
    """Wait for t3rl's next request and tell the zygote it was taken; exits if t3rl closed the socket."""
    message, fds, _, _ = socket.recv_fds(ctl, 1 << 16, len(Pipes.__dataclass_fields__))
    ctl.close()
    if not message:
        os._exit(0)  # nothing written to `taken`: the zygote exits too
    with contextlib.suppress(OSError):  # a dead zygote: this cell still runs, t3rl restarts it next time
        os.write(taken, b"t")
    os.close(taken)
    return Pipes(*fds)


def _fail_next_request(ctl: socket.socket, taken: int, err: BaseException) -> None:
    """Preparing failed: answer the next request with the reason instead of leaving it unanswered."""
    report(_take_request(ctl, taken).status, {"setup_error": f"{type(err).__name__}: {err}"})
    os._exit(0)


def _read_source(fd: int) -> str:
    header = _read_exactly(fd, 8)
    return _read_exactly(fd, int.from_bytes(header, "little")).decode("utf-8", errors="replace")


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("t3rl closed the cell's source pipe early")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def visible_path(path: str) -> str:
    """`path` (a PATH) with only the absolute directories that exist in the cell's root: the host's others
    (`/home/alice/.local/bin`, `/opt/<project>/bin`) tell a cell of the host's users and tools, and nothing
    runs from them there. Relative entries are the cell's own directory's."""
    return os.pathsep.join(p for p in path.split(os.pathsep) if not os.path.isabs(p) or os.path.isdir(p))


def report(fd: int, message: dict) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, json.dumps(message).encode() + b"\n")


def _init(spec: dict, ctl: socket.socket, taken: int, workdir: str) -> None:
    """PID 1 of the cell's namespace (or a plain parent without namespaces); never returns."""
    try:
        if spec["namespaces"]:
            mounts.mount_proc()
        else:
            # What the cell leaves behind (a daemon that called setsid, a double fork) is re-parented
            # here instead of to the host's init, so it can be found and killed when the cell ends.
            prctl(PR_SET_CHILD_SUBREAPER, 1)
    except BaseException as err:
        _fail_next_request(ctl, taken, err)
    pipes = _take_request(ctl, taken)
    try:
        code = _read_source(pipes.lifeline)
        cell = fork_patiently(spec["patience_s"], pipes.lifeline)
        if cell == 0:
            _cell(spec, pipes, code, workdir)
        os.close(pipes.stdout)
        os.close(pipes.stderr)
        outcome = _wait(cell, pipes.lifeline)
    except BaseException as err:
        report(pipes.status, {"setup_error": f"{type(err).__name__}: {err}"})
        os._exit(0)
    if sysv_allowed(spec):
        ipc.remove_sysv_objects()
    if outcome is not None:
        report(pipes.status, outcome)
    if not spec["namespaces"]:
        # Without a PID namespace nothing tears the cell's processes down with this one: kill them all.
        _kill_descendants()
        shutil.rmtree(workdir, ignore_errors=True)
    os._exit(0)


def _kill_descendants() -> None:
    """Kill and reap every child of this (subreaper) process until none is left: the grandchildren of a
    killed child become children here in turn. Each round kills all it sees, so a process forking as
    fast as it can gains nothing."""
    while True:
        for pid in _children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(pid) for pid in f.read().split()]
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN
        pass
    found = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{entry}/stat") as f:
            # pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'
            if int(f.read().rpartition(")")[2].split()[1]) == me:
                found.append(int(entry))
    return found


def _wait(cell: int, lifeline: int) -> dict | None:
    """The cell's exit as a status message; None when t3rl dropped the lifeline first."""
    pidfd = os.pidfd_open(cell)
    poll = select.poll()
    poll.register(pidfd, select.POLLIN)
    poll.register(lifeline, select.POLLIN)
    while True:
        ready = dict(poll.poll())
        if pidfd in ready:
            break
        if lifeline in ready:
            return None
    _, wait_status, usage = os.wait4(cell, 0)
    code = os.waitstatus_to_exitcode(wait_status)
    if code >= 0:
        return {"exit": code}
    # A cell that ignores SIGXCPU is SIGKILLed at the hard limit: its CPU time tells the two apart.
    return {"signal": -code, "cpu_s": usage.ru_utime + usage.ru_stime}


def _cell(spec: dict, pipes: Pipes, code: str, workdir: str) -> None:
    """The cell: confine, then run the source as __main__; never returns.

    The cell's code may replace or break what runs after it (`os._exit`, `threading`, `atexit`, its
    stdio): whatever it did, this process leaves here with the exit code Python would give, never
    returning into init's or the zygote's code, whose handlers would report a success."""
    leave = os._exit  # taken before the cell's code can replace it
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(pipes.stdout, 1)
        os.dup2(pipes.stderr, 2)
        for fd in (null, pipes.stdout, pipes.stderr, pipes.lifeline):
            os.close(fd)
        applied = confine(spec, workdir)
        # The host's layout (hidden and readable paths, the project's directory) is of no use to the
        # cell's code: gone from its memory before it runs.
        spec.clear()
        os.chdir(workdir)
        os.environ.update(HOME=workdir, TMPDIR=workdir, PATH=visible_path(os.environ.get("PATH", "")))
        _reseed_preloaded()
    except BaseException as err:
        report(pipes.status, {"setup_error": f"{type(err).__name__}: {err}"})
        os._exit(0)
    report(pipes.status, {"applied": applied})
    os.close(pipes.status)
    exit_code, outcome = 1, None
    try:
        try:
            outcome = _run(code)
        except BaseException:  # reporting the cell's own exception failed (e.g. its stderr closed)
            _say("the cell raised an exception that could not be reported")
            outcome = 1
        exit_code = _finish(1 if outcome is None else outcome)
        if outcome is None:
            _die_by_sigint()
    finally:
        leave(exit_code & 0xFF)


def _die_by_sigint() -> None:
    """An uncaught KeyboardInterrupt: Python ends by SIGINT, with its default action."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # the cell replaced or blocked what this needs: the exit code stands
        pass


def _reseed_preloaded() -> None:
    """Fresh randomness for this cell in the generators the zygote's preloaded modules seeded once."""
    for name, call in RESEEDED_AFTER_FORK.items():
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, call)()


def confine(spec: dict, workdir: str) -> list[str]:
    """Apply the cell-side layers the spec asks for, in the order they depend on; the names applied."""
    applied = []
    privileges.set_oom_score_adj(privileges.OOM_FIRST)
    if spec["nice"]:
        privileges.lower_priority(spec["nice"])
    privileges.set_limits(spec["limits"], nproc=spec["rlimit_nproc"], own_uid=spec["setuid"])
    if spec["drop_privileges"]:
        privileges.drop_bounding_set()
        if spec["setuid"]:
            privileges.become(spec["uid"], spec["gid"])
        privileges.drop_capabilities()
        privileges.set_no_new_privs()
        applied.append("user")
    if spec["landlock_abi"]:
        writable = [workdir, mounts.SHM_DIR] if spec["namespaces"] else [workdir]
        readable = [*spec["readable"], *proc_readable(spec)]
        landlock.restrict(writable, [os.devnull], spec["landlock_abi"], readable)
        applied.append("landlock")
    if spec["seccomp"]:
        refused = () if spec["memory_cgroup"] else seccomp.MEMFD
        refused += () if sysv_allowed(spec) else seccomp.SYSV_IPC
        refused += () if spec["namespaces"] else seccomp.MQUEUE
        # Cells that keep t3rl's uid (it is not root) share its per-uid pipe pages.
        seccomp.install(refused + (() if spec["setuid"] else seccomp.PIPE_SIZE))
        applied.append("seccomp")
    return applied


def proc_readable(spec: dict) -> list[str]:
    """What a cell reads of /proc: all of it in its own PID namespace (whose /proc shows the cell's
    processes only); without one, the host's /proc shows every process's command line, so only this
    process's own directory and the system-wide counters programs size themselves by."""
    if spec["namespaces"]:
        return ["/proc"]
    return [f"/proc/{os.getpid()}", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat"]


def sysv_allowed(spec: dict) -> bool:
    """SysV IPC objects outlive their creator: only a cell with its own IPC namespace, whose memory
    cgroup counts what they hold, may make them (its init removes them when it ends)."""
    return spec["memory_cgroup"] and spec["namespaces"]


def _run(code: str) -> int | None:
    """Execute the cell as `__main__`; returns the exit code Python itself would give it, None for an
    uncaught KeyboardInterrupt (Python then ends by SIGINT).

    As `python -c` runs code: its globals are a fresh `__main__` module's, in `sys.modules` (pickle finds
    what the cell defines there: multiprocessing, ProcessPoolExecutor); its working directory is first
    on `sys.path` (a module the cell wrote is importable; the zygote runs isolated, `-I`, without it);
    and it is compiled without this module's `from __future__ import annotations`."""
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.path.insert(0, "")
    try:
        exec(compile(code, CELL_FILENAME, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as exit_:
        if exit_.code is None:
            return 0
        if isinstance(exit_.code, int):
            # Python takes the code as a C long: one beyond it exits -1 (255), not its low byte (0).
            return exit_.code if -_C_LONG <= exit_.code < _C_LONG else -1
        print(exit_.code, file=sys.stderr)
        return 1
    except BaseException as exc:
        # Skip this function's frame: the traceback starts in the cell.
        tb = exc.__traceback__.tb_next if exc.__traceback__ else None
        hook = sys.excepthook
        if hook is not sys.__excepthook__:  # the cell installed its own, which Python would call
            try:
                hook(type(exc), exc, tb)
                return None if isinstance(exc, KeyboardInterrupt) else 1
            except BaseException:  # Python then prints the exception itself
                pass
        # Imported only now: they cost milliseconds on every cell otherwise.
        import linecache
        import traceback

        linecache.cache[CELL_FILENAME] = (len(code), None, code.splitlines(keepends=True), CELL_FILENAME)
        tb = _last_entries(tb, TRACEBACK_FRAMES)
        traceback.print_exception(type(exc), exc, tb, limit=-TRACEBACK_FRAMES)
        return None if isinstance(exc, KeyboardInterrupt) else 1
    return 0


def _last_entries(tb: TracebackType | None, n: int) -> TracebackType | None:
    """The last `n` entries of a traceback, as the interpreter's own printer shows them. A runaway
    recursion (a million frames after sys.setrecursionlimit) takes the traceback module seconds per
    hundred thousand entries even with a negative limit (it reads every entry's positions); following
    the links is a hundred times cheaper."""
    depth, entry = 0, tb
    while entry is not None:
        depth, entry = depth + 1, entry.tb_next
    for _ in range(depth - n):
        assert tb is not None
        tb = tb.tb_next
    return tb


def _finish(exit_code: int) -> int:
    """The interpreter's teardown, the parts a cell can observe, done by hand; the exit code to leave with.

    A normal teardown in a forked child touches every inherited page (copy-on-write) and takes tens of
    milliseconds; waiting for the cell's threads, atexit handlers and flushing stdio is what matters.
    As in Python, a step the cell broke (`sys.modules['threading'] = 0`, `atexit._run_exitfuncs = None`)
    is skipped and the others still run; output lost because stdout or stderr cannot be flushed makes it
    120.
    Plain `try` only: the cell may have replaced what a helper (`contextlib.suppress`) would need.
    """
    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()  # type: ignore[attr-defined]
    except BaseException:
        _say("Exception ignored while waiting for the cell's threads")
    try:
        atexit._run_exitfuncs()  # type: ignore[attr-defined]
    except BaseException:
        _say("Exception ignored while running the cell's atexit handlers")
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not getattr(stream, "closed", False):
                stream.flush()
        except BaseException:
            exit_code = 120
    return exit_code


def _say(line: str) -> None:
    """One line on the cell's stderr, if it still has one."""
    try:  # noqa: SIM105 - contextlib is among what the cell may have replaced
        os.write(2, line.encode() + b"\n")
    except BaseException:
        pass
