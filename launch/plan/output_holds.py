"""What each output a stage declares must hold once its command exited 0: the one declaration of it.

A stage's `verify` maps each output path it writes to a `Holds`: a file with bytes (a split a later stage
reads, an eval's summary), a directory with entries and, where its tool marks a whole output, the marker
files inside it (a checkpoint's `latest_checkpointed_iteration.txt`, a conversion's `.t3rl-complete`),
or, said so by name, a file that may be empty (a split no stage reads). The pipeline reads the
declaration when the stage ends: a stage that exited 0 with an empty summary, an empty checkpoint dir or
one without its marker has failed, its record names the output and why, and a resume runs it again.
Before, only existence was checked, so `touch summary.json` or a checkpoint dir made but never written
recorded the stage as succeeded, and what read it failed later (or scored nothing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from t3rl_core.records import Record

HoldsKind = Literal["file", "dir", "exists"]


class Holds(Record):
    """What one output path must hold: `file` a file with at least one byte; `dir` a directory with at
    least one entry and each of `markers` (relative paths) a file inside it; `exists` a file or
    directory, empty or not."""

    kind: HoldsKind
    markers: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.kind == "file":
            return "a file with bytes"
        if self.kind == "dir":
            return "a directory with " + (" and ".join(self.markers) if self.markers else "entries")
        return "a file or directory (may be empty)"


# The file Megatron writes into a torch_dist checkpoint dir once a save is whole (train, HF → torch_dist).
LATEST_CHECKPOINT = "latest_checkpointed_iteration.txt"

FILE = Holds("file")
DIR = Holds("dir")
# A file the stage writes that no later stage reads, which may hold nothing (a split of size 0).
MAY_BE_EMPTY = Holds("exists")


def marked(*markers: str) -> Holds:
    """A directory whose tool writes `markers` into it only once it is whole."""
    return Holds("dir", markers)


def shortfall(path: str, holds: Holds) -> str | None:
    """Why `path` does not hold what is declared, or None when it does (a missing path included: the
    caller names a missing output in its own words)."""
    if holds.kind == "exists" or not os.path.lexists(path):
        return None
    if holds.kind == "file":
        if not os.path.isfile(path):
            return f"{path} is not a file (declared: {holds.describe()})"
        return f"{path} is empty (declared: {holds.describe()})" if os.path.getsize(path) == 0 else None
    if not os.path.isdir(path):
        return f"{path} is not a directory (declared: {holds.describe()})"
    with os.scandir(path) as entries:
        if next(entries, None) is None:
            return f"{path} is an empty directory (declared: {holds.describe()})"
    absent = [m for m in holds.markers if not os.path.isfile(os.path.join(path, m))]
    if absent:
        return f"{path} has no {', '.join(absent)} (declared: {holds.describe()}; it is not whole)"
    return None


def first_shortfall(declared: Mapping[str, Holds]) -> str | None:
    """The first declared output that does not hold what it must; None when all do."""
    for path, holds in declared.items():
        why = shortfall(path, holds)
        if why is not None:
            return why
    return None
