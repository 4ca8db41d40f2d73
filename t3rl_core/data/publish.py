"""Prepared data appears whole or not at all: the preparation writes into a hidden sibling of its
output dir, and only a finished preparation is moved into place, `manifest.json` last. A preparation
stopped at any moment (Ctrl-C, SIGTERM, an exception) leaves the output dir as it was, or without its
manifest, which every reader takes for "not prepared" (`t3rl_core.data.check`, `t3rl eval`). The
temporary dir of a preparation killed outright (SIGKILL) is removed by the next one on that host."""

from __future__ import annotations

import errno
import glob
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from t3rl_core.atomic_files import umask

# A prepare_data stage's shell builds the shared copy in `mktemp -d "<dir>.tmp.XXXXXX"` and renames it
# to <dir> once whole (launch.plan.builders.prepare): a preparation into such a dir names <dir>, the
# only one left once the stage ends.
STAGE_STAGING = ".tmp."


def final_dir(out: Path) -> Path:
    """`out`, or the dir the stage's shell renames it to when `out` is its `mktemp` staging dir."""
    name, sep, rest = out.name.rpartition(STAGE_STAGING)
    return out.with_name(name) if sep and name and len(rest) == 6 and rest.isalnum() else out


@contextmanager
def staged(out: Path, manifest: str) -> Iterator[tuple[Path, Callable[[], None]]]:
    """(a temporary dir beside `out`, publish): write the data into the dir, then call publish to move
    it into `out`, `manifest` last. The temporary dir is removed however the block ends."""
    mine = f".{out.name}.partial-{socket.gethostname()}-"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(out.parent, mine)
        staging = Path(tempfile.mkdtemp(prefix=f"{mine}{os.getpid()}-", dir=out.parent))
    except OSError as error:  # named as the user gave it, not as the hidden sibling's name
        raise OSError(error.errno, error.strerror, str(out)) from None
    try:
        yield staging, lambda: _publish(staging, out, manifest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_abandoned(parent: Path, prefix: str) -> None:
    """Temporary dirs of preparations on this host whose process is gone (killed with SIGKILL, the
    machine rebooted): nothing will ever publish them."""
    for staging in parent.glob(f"{glob.escape(prefix)}*-*"):
        pid = staging.name.removeprefix(prefix).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(staging, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _publish(staging: Path, out: Path, manifest: str) -> None:
    if _empty_or_absent(out):
        # One rename: the dir appears whole. It gets the mode `out` has (a shared cache dir made
        # readable to all) or a fresh directory would get.
        staging.chmod(stat.S_IMODE(out.stat().st_mode) if out.is_dir() else 0o777 & ~umask())
        try:
            os.replace(staging, out)
            return
        except OSError as error:  # another preparation into `out` published first: file by file
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    # `out` holds other files (a previous preparation, the user's own): its manifest goes first, so
    # that until the new one is in place the dir reads as unprepared, never as the old data whole.
    (out / manifest).unlink(missing_ok=True)
    for entry in sorted(staging.iterdir(), key=lambda p: p.name == manifest):
        target = out / entry.name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(entry, target)


def _empty_or_absent(out: Path) -> bool:
    if not out.exists() and not out.is_symlink():
        return True
    return out.is_dir() and not out.is_symlink() and next(out.iterdir(), None) is None
