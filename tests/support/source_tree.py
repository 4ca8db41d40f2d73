"""The repository's Python sources parsed once per process, for the tests that read them with `ast`.

Each architecture test scans every module of the packages (several scan tests/ too) and parsed each file
again: ~1 s of CPU for launch/ and t3rl_core/, ~3 s for tests/, per test that reads them; a worker of
the suite that ran several paid each again. A tree is never changed by its readers (they walk it), so one
parse serves them all. A pickled tree loads slower than the text parses, so nothing is kept on disk.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path


@cache
def tree(path: Path) -> ast.Module:
    """`path` parsed (its name in syntax errors, as `ast.parse(text, path)` gives)."""
    return ast.parse(path.read_bytes(), str(path))


@cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `tree(path)`, in `ast.walk`'s order."""
    return tuple(ast.walk(tree(path)))


@cache
def text(path: Path) -> str:
    """`path`'s source as UTF-8 text."""
    return path.read_text(encoding="utf-8")
