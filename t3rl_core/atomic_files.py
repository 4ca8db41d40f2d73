"""Writing a file so that a reader (or a later run) sees its old content or its new, never half of it:
a temporary file beside it, renamed over it. Shared by the runtime (eval summaries, reports, the eval's
resumable record) and the launcher (`launch.files`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Write `text` to `path` so that readers see the old content or the new, never a mix.

    `durable` also fsyncs the file and its directory before returning, so the new content survives a
    power loss (state files); files that are rewritten on every invocation skip that cost.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.filename is not None:
            raise
        # A failed write names no file (a full disk, a quota): say which file it was for.
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
