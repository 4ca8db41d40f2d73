"""Code that reads top-down: on the CLI path, a module's dependencies are at its top. An import inside a
function is a lazy boundary on purpose (a heavy library, a path only some commands take, the compose-ahead
fork) and says why on its line, or the line above: `# lazy: <reason>`.

The CLI path is every module of `launch` and every t3rl_core module they import, directly or not, when
they are imported (read from the sources: tests/architecture/import_graph.py).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.architecture.import_graph import LocalImport, function_imports, import_graph

REPO = Path(__file__).resolve().parents[2]
REASON = re.compile(r"#\s*lazy:\s*\S")


@cache  # both tests read it; each reading parses every module
def cli_path() -> frozenset[str]:
    graph = import_graph(REPO, when_imported=True)
    found: set[str] = set()
    todo = [module for module in graph if module.startswith("launch")]
    while todo:
        module = todo.pop()
        if module not in found:
            found.add(module)
            todo.extend(graph[module])
    return frozenset(found)


def unexplained(imports: list[LocalImport]) -> list[str]:
    return [
        f"{i.module}:{i.line}: {i.text.strip()}"
        for i in imports
        if not (REASON.search(i.text) or REASON.search(i.above))
    ]


def test_the_cli_path_reaches_into_t3rl_core() -> None:
    path = cli_path()
    assert {"launch.cli", "launch.cli.app", "launch.config.schema", "t3rl_core.config"} <= path
    assert "t3rl_core.hooks.slime" not in path  # runs inside slime, never imported by the CLI


def test_every_function_local_import_on_the_cli_path_says_why() -> None:
    found = [i for module in sorted(cli_path()) for i in function_imports(REPO, module)]
    assert len(found) > 20  # the reader sees them (a few dozen boundaries remain, each explained)
    assert unexplained(found) == []


def test_an_import_without_a_reason_is_reported() -> None:
    planted = [
        LocalImport("m", 3, "    import torch", "def f() -> None:"),
        LocalImport("m", 7, "    import torch  # lazy: torch, only for f", ""),
        LocalImport("m", 9, "    import torch", "    # lazy: torch, only for g"),
        LocalImport("m", 12, "    import torch  # lazy:", ""),
    ]
    assert unexplained(planted) == ["m:3: import torch", "m:12: import torch  # lazy:"]
