"""An OSError on a file as one line a user can act on: the file, the system's reason, what to do.

A write that fails for want of space (or quota, or an I/O error) raises from `handle.write()` or from
the flush at `close()`, and that OSError names no file (`filename` is None): the traceback is then the
only place that says which file it was. `failed_file` finds it there, in the file object the failing
frame (or a frame below it) held, so every writer of t3rl's, a plugin's or a library's is covered, not
only the ones that attach their file name. Shared by the launcher (`launch.cli.failures`) and the
runtime's stage commands (`python -m t3rl_core.eval`, `…data`, `…chat.tiny`: `stage_main`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import PurePath
from typing import NoReturn

# What to do about an OSError on a path, by errno; `{where}` is how the command chooses another dir.
ADVICE = {
    errno.ENOTDIR: "a file is where t3rl needs a directory: move it away or point the path elsewhere",
    errno.EISDIR: "a directory is where t3rl needs a file: give a file's path",
    errno.EEXIST: "something is already there: remove it or choose another path",
    errno.EACCES: "no permission there: choose a directory you can write ({where}) or fix it",
    errno.EPERM: "no permission there: choose a directory you can write ({where}) or fix it",
    errno.EROFS: "a read-only file system: choose a writable directory ({where})",
    errno.ENOSPC: "the disk is full: free space or choose another directory",
    errno.EDQUOT: "your disk quota is used up: free space or choose another directory",
    errno.EFBIG: "the file is larger than this file system or your limit allows: choose another directory",
    errno.EIO: "the device reported an I/O error: check the disk (dmesg) or choose another directory",
    errno.ENAMETOOLONG: "the path is too long: choose a shorter one",
    errno.ENOENT: "it does not exist: check the path",
    # flock on an NFS mount without its lock service: a run dir's lock is what keeps one launcher per dir.
    errno.ENOLCK: "this file system keeps no file locks, as an NFS mount without its lock service does: "
    "choose a directory on one that does ({where}; a run dir copied there resumes)",
}
# The errors a write or close raises without naming its file (the storage's, not the path's).
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS})
# How a stage command's output dir is chosen: by the run's config (paths.runs_dir).
STAGE_WHERE = "paths.runs_dir=…"
# The exit code of a stage command that could not write a file (docs/reference/cli-behaviour.md).
EXIT_WRITE_FAILED = 1


def failed_file(error: OSError) -> str | None:
    """The file `error` is about: its own filename (→ filename2), or the file object that the innermost
    frame of its traceback holding one was writing (or reading)."""
    if error.filename is not None:
        first = os.fsdecode(error.filename) if isinstance(error.filename, bytes) else str(error.filename)
        return first if error.filename2 is None else f"{first} → {error.filename2}"
    if error.errno not in STORAGE_ERRNOS:  # a socket's or a process's error is no file's
        return None
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):  # innermost first: the file the failing call was writing
        values = list(frame.f_locals.values())
        for value in values:
            name = _file_name(value)
            if name == "":  # a descriptor closed since (os.fdopen in a with): the frame's path
                name = next((os.fspath(v) for v in values if isinstance(v, PurePath)), None)
            if name is not None:
                return name
    return None


@contextlib.contextmanager
def naming(file: object) -> Iterator[None]:
    """An OSError of writing, flushing or closing `file` carries its path: `failed_file` reads the
    error's own filename first, and the frames of a writer that holds its files as attributes (an
    object's `close()`, a child process) hold no file object to read it from."""
    try:
        yield
    except OSError as error:
        if error.filename is None and isinstance(name := _file_name(file), str) and name:
            error.filename = name
        raise


def _file_name(value: object) -> str | None:
    """The path of a file object; "" for one opened on a descriptor that is closed now."""
    if not isinstance(value, io.IOBase | io.TextIOWrapper):
        return None
    name = getattr(value, "name", None)
    if isinstance(name, int):  # os.fdopen(fd): the descriptor's path while it is open
        try:
            return os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            return ""
    if isinstance(name, bytes):
        return os.fsdecode(name)
    return name if isinstance(name, str) and name not in ("<stdout>", "<stderr>", "<stdin>") else None


def os_error_line(error: OSError, where: str = STAGE_WHERE) -> str | None:
    """`error: <file>: <reason> (<what to do>)`, or None when no file can be named (not a file's error)."""
    path = failed_file(error)
    if path is None:
        return None
    return error_line(path, error, advice(error, where))


def advice(error: OSError, where: str = STAGE_WHERE) -> str:
    """What to do about `error` (ADVICE's line); `where` is how the command chooses another dir. A file
    too large for this process's limit (`ulimit -f`: RLIMIT_FSIZE, inherited from a shell or a batch
    system) is no matter of the directory: the limit is named, with its size, to be raised."""
    limit = _file_size_limit() if error.errno == errno.EFBIG else None
    if limit is not None:
        return f"this process may write files of at most {limit:,} bytes (`ulimit -f`): raise the limit"
    return ADVICE.get(error.errno or 0, "").format(where=where)


def _file_size_limit() -> int | None:
    """The soft RLIMIT_FSIZE in bytes, None when unlimited (or unknown here)."""
    try:
        import resource  # lazy: only once a write failed; not on every system

        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except (ImportError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def error_line(path: str, error: OSError, advice: str) -> str:
    """`error: <path>: <the system's reason> (<advice>)`: how the launcher and the stage commands say it."""
    reason = (error.strerror or os.strerror(error.errno)) if error.errno else str(error)
    return f"error: {path}: {reason}" + (f" ({advice})" if advice else "")


def stage_main(main: Callable[[], int]) -> NoReturn:
    """Run a stage command's `main` and exit with its code; an OSError on a file (a full disk, a
    quota, a read-only dir) ends it with one line naming the file and the fix, exit
    EXIT_WRITE_FAILED, not a traceback (T3RL_TRACEBACK=1 shows the traceback)."""
    from t3rl_core.home_paths import writable_user_dirs  # lazy: only a stage command's start

    writable_user_dirs()  # a read-only home: libraries' caches go elsewhere, without their warnings
    try:
        code = main()
    except OSError as error:
        line = os_error_line(error)
        if line is None or os.environ.get("T3RL_TRACEBACK", "") not in ("", "0"):
            raise
        sys.stderr.write(line + "\n")
        sys.exit(EXIT_WRITE_FAILED)
    sys.exit(code)
