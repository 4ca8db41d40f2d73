"""One eval writes a record dir at a time.

An eval appends each finished episode to `trajectories.jsonl` through a file it keeps open, and a new
or resumed eval first rewrites that file whole (`t3rl_core.eval.resume`: truncated, or replaced by its
verified lines). A second eval into the same dir (the pipeline's eval stage run again while the first
stage process still runs, or `t3rl eval --out` pointed at a stage's dir) replaced the file under the
first one: the first's records went on into a file no longer in the dir, lost without a word, and its
summary.json was overwritten. `t3rl eval` locks its `--out` (`.lock`), but the eval stage's command
(`python -m t3rl_core.eval`) locked nothing. The lock is taken where the records are written, so every
way in holds it.

An advisory `flock` on `<out>/.records.lock`: the OS drops it when its process dies however it dies,
so no stale lock is ever left. Each holder opens its own descriptor, so a second eval in the same
process is refused too.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RECORD_LOCK = ".records.lock"


class RecordsInUse(RuntimeError):
    """Another eval is writing the records of this dir."""


@contextmanager
def record_lock(out_dir: Path) -> Iterator[None]:
    """Hold `out_dir`'s records for the block, or raise RecordsInUse at once (no waiting)."""
    fd = os.open(out_dir / RECORD_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RecordsInUse(
            f"{out_dir} is being written by another eval still running (its trajectories.jsonl is open "
            "there): wait for it to end, or write this eval's records into another directory (--out)"
        ) from None
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor drops the lock


def refuse_if_in_use(out_dir: Path) -> None:
    """Raise RecordsInUse when another eval holds `out_dir`'s records now; for a caller that writes
    into the dir (its config, its manifest) before the eval itself takes the lock."""
    if (out_dir / RECORD_LOCK).exists():
        with record_lock(out_dir):
            pass
