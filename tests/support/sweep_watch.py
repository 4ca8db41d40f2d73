"""Watch a runs dir for a sweep dir without its record: an audit hook looks before every file operation
of this process (open, mkdir, rename, replace) whether some `sweep-*` dir lacks its sweep.json."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# The dir being watched (empty: the hook does nothing) and what it saw.
_WATCHED: list[Path] = []
_SEEN_BARE: list[str] = []


def _sweep_dir_never_bare(event: str, args: tuple) -> None:
    if not _WATCHED or event not in ("open", "os.mkdir", "os.rename", "os.replace"):
        return
    watched = _WATCHED.pop()  # the scan below is audited too: stop watching while it runs
    try:
        for name in os.listdir(watched) if os.path.isdir(watched) else []:
            if name.startswith("sweep-") and not os.path.exists(os.path.join(watched, name, "sweep.json")):
                _SEEN_BARE.append(f"{name} before {event} {args[0]!r}")
    finally:
        _WATCHED.append(watched)


sys.addaudithook(_sweep_dir_never_bare)  # once per process: audit hooks cannot be removed


@contextmanager
def bare_sweep_dirs(parent: Path) -> Iterator[list[str]]:
    """Within the block, every moment a sweep dir under `parent` existed without its record."""
    _SEEN_BARE.clear()
    _WATCHED.append(parent)
    try:
        yield _SEEN_BARE
    finally:
        _WATCHED.clear()
