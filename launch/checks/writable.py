"""Whether t3rl can make and write a directory at a path on this machine: the one answer pre-flight's
`OutputDir` rule and the commands' own output options (`t3rl eval --out`, `t3rl plan --out`) give."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def unwritable(path: Path) -> str | None:
    """Why t3rl could not create or write `path`, or None."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{path} is not writable by this user"
        return _refused_write(path, path)
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, so {path} cannot be created"
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return f"{path} does not exist and {ancestor} is not writable by this user"
    return _refused_write(ancestor, path)


def _refused_write(directory: Path, path: Path) -> str | None:
    """Why a directory cannot be made in `directory` (which `path` needs), found by making one and
    removing it: permission bits do not say it for root (who passes every access check) nor for the
    kernel's own trees (/proc, /sys), whose modes allow what the kernel then refuses."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".t3rl-probe-", dir=directory))
    except OSError as exc:
        return f"{path} cannot be created: making a directory in {directory} fails ({exc.strerror})"
    return None
