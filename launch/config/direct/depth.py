"""A config file nested deeper than `config_files._MAX_DEPTH` levels (passed in: the bound is declared
once, where it is checked), said at its file, the line of its
top-level key and the keys down to the bound (the refusal's words; the bound is checked as the file is
read). A file a few thousand levels deep (generated, or a paste gone wrong) ended `t3rl validate` in
Python's RecursionError, a traceback: every reader of a config walks it one call per level."""

from __future__ import annotations

import re
from typing import Any

from launch.config.errors import Problem


def too_deep(data: Any, bound: int) -> list[str] | None:
    """The keys (or `[i]` items) down to the first value nested deeper than `bound`; None when none is.
    Walked with a stack, not recursion, so that the walk itself cannot hit Python's limit."""
    stack: list[tuple[Any, list[str]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if len(path) > bound:
            return path
        if isinstance(value, dict):
            stack.extend((child, [*path, str(key)]) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, [*path, f"[{i}]"]) for i, child in enumerate(value))
    return None


def too_deep_problem(file: str, text: str, path: list[str], bound: int) -> Problem:
    top = path[0] if path else None
    line = None
    if top is not None:
        found = re.search(rf"^{re.escape(top)}\s*:", text, re.M)
        line = text.count("\n", 0, found.start()) + 1 if found else None
    where = f"{file}:{line}" if line else file
    shown = ".".join(path[:5]) + (".…" if len(path) > 5 else "")
    key = top or file
    return Problem(
        key=key,
        message=f"{where}: '{shown}' nests more than {bound} levels deep (a config nests at most that)",
        source=file,
        fix=f"flatten or delete '{key}' in {file}",
    )
