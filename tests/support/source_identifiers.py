"""Names written in the standard library's modules and in t3rl's own (what a traceback or a log line
prints), for the secret tests that must leave every one of them as written."""

from __future__ import annotations

import re
import sysconfig
from pathlib import Path

_ROOTS = (
    Path(sysconfig.get_paths()["stdlib"]),
    Path(__file__).parents[2] / "t3rl_core",
    Path(__file__).parents[2] / "launch",
)
_SKIPPED = frozenset({"test", "tests", "idle_test", "site-packages"})


def source_identifiers(pattern: str) -> set[str]:
    """Every match of `pattern` in the standard library's and t3rl's sources, tests left out."""
    names: set[str] = set()
    for root in _ROOTS:
        for path in root.glob("**/*.py"):
            if not _SKIPPED & set(path.relative_to(root).parts):
                names.update(re.findall(pattern, path.read_text(errors="replace")))
    return names
