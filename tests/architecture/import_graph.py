"""The import graph of t3rl's own packages, read from the sources (nothing is imported).

Every import counts: module level, inside functions (lazy imports), under `TYPE_CHECKING`, and
`importlib.import_module("literal")` — a lazy import is still a dependency, and a circle through one
is still a circle a reader has to hold in mind.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.support import source_tree

PACKAGES = ("launch", "t3rl_core")


def module_name(root: Path, file: Path) -> str:
    parts = list(file.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of t3rl's packages under `root`, by dotted name."""
    return dict(_modules(root))


@cache  # walked once per process: function_imports asks for every module of the CLI path (~300)
def _modules(root: Path) -> tuple[tuple[str, Path], ...]:
    files = (file for package in PACKAGES for file in sorted((root / package).rglob("*.py")))
    return tuple((module_name(root, file), file) for file in files)


def _imported_names(tree: ast.AST, current: str, is_package: bool) -> Iterator[str]:
    yield from _names_of(ast.walk(tree), current, is_package)


def _names_of(nodes: Iterable[ast.AST], current: str, is_package: bool) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = current.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                stem = ".".join([*base, node.module] if node.module else base)
            else:
                stem = node.module or ""
            yield stem
            yield from (f"{stem}.{alias.name}" for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value


def import_graph(root: Path, *, when_imported: bool = False) -> dict[str, set[str]]:
    """module → the t3rl modules it imports (a `from package import name` counts as importing the
    submodule `package.name` when one exists, else the package). `when_imported`: only the imports that
    run when the module is imported (not those inside functions or under `TYPE_CHECKING`)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, file in known.items():
        targets = set()
        # Parsed once per process (tests/support/source_tree.py): each graph and function_imports read them.
        nodes = _module_level(source_tree.tree(file).body) if when_imported else source_tree.nodes(file)
        for imported in _names_of(nodes, name, file.name == "__init__.py"):
            if imported in known:
                targets.add(imported)
        # `from a.b import c`: both "a.b" and "a.b.c" were yielded; keep the submodule alone when it exists.
        for target in list(targets):
            is_package = known[target].name == "__init__.py"
            if is_package and any(other.startswith(target + ".") for other in targets):
                targets.discard(target)
        targets.discard(name)
        graph[name] = targets
    return graph


def _module_level(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The import statements among `body` that run on import (into if/try/with, not functions)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and not _is_type_checking(node.test):
            yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _module_level(block)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # importlib.import_module("x")
            yield node


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass(frozen=True)
class LocalImport:
    """An import statement inside a function body."""

    module: str
    line: int
    # The statement's first line and the line above it, as written.
    text: str
    above: str


def function_imports(root: Path, module: str) -> list[LocalImport]:
    """Every import statement inside a function (or method) of `module`."""
    file = modules(root)[module]
    lines = source_tree.text(file).splitlines()
    found = []
    for function in source_tree.nodes(file):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import | ast.ImportFrom):
                above = lines[node.lineno - 2] if node.lineno > 1 else ""
                found.append(LocalImport(module, node.lineno, lines[node.lineno - 1], above))
    return sorted(set(found), key=lambda i: i.line)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
