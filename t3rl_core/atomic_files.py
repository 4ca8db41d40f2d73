"""Writing a file so that a reader (or a later run) sees its old content or its new, never half of it:
a temporary file beside it, renamed over it. Shared by the runtime (eval summaries, reports, the eval's
resumable record) and the launcher (`launch.files`)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import NoReturn


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Write `text` to `path` so that readers see the old content or the new, never a mix.

    `durable` also fsyncs the file and its directory before returning, so the new content survives a
    power loss (state files); files that are rewritten on every invocation skip that cost.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = file_mode(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as error:
        _failed(error, tmp, path)
    if durable:
        _sync_dir(path.parent)


def atomic_copy(src: Path, dst: Path, *, durable: bool = False) -> None:
    """`src` (its bytes, mode and times) copied to `dst` whole or not at all: a copy cut short by a
    full disk or a file-size limit left half a file under the copy's name (a superseded config).
    `durable` as for `atomic_write_text`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copy2(src, tmp)
        if durable:
            copied = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(copied)
            finally:
                os.close(copied)
        os.replace(tmp, dst)
    except BaseException as error:
        _failed(error, tmp, dst)
    if durable:
        _sync_dir(dst.parent)


def _sync_dir(directory: Path) -> None:
    """fsync `directory`, so a file renamed into it is there after a power loss."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _failed(error: BaseException, tmp: str, path: Path) -> NoReturn:
    """Remove the temporary file of a write to `path` that failed, and raise its error; one that names
    no file (a full disk, a quota, a file-size limit) or only the temporary one (a copy names its source
    and the temporary file) is raised naming the file it was for."""
    Path(tmp).unlink(missing_ok=True)
    if not isinstance(error, OSError) or (
        error.filename is not None and tmp not in (error.filename, error.filename2)
    ):
        raise error
    raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def file_mode(path: Path) -> int:
    """The permission bits `path` is written with: its own when it exists (as writing it in place keeps
    them), else a new file's under this process's umask. mkstemp's temporary file is 0600, which its
    rename made the mode of every record: a run dir on shared storage could not be read, copied or
    resumed by anyone else (its logs, data and checkpoints could)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~umask()


def umask() -> int:
    """This process's umask, read without changing it (os.umask sets it to learn it: a thread creating a
    file meanwhile would get the wrong mode); set-and-restore only where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
