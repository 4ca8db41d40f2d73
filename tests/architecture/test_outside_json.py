"""Every parse of JSON text in t3rl goes through `t3rl_core.outside_json`, under its declared depth
and size limit, except the reads listed here of what t3rl hands itself (its composition cache, a
launcher's config handed to its own hooks, a parent's message to its child); run records are read
under the limit too (a record edited by hand is text from outside). A raw `json.loads` on what a
server, a world, a plugin or a dataset hands t3rl raised RecursionError in Python's words on a body
nested past Python's recursion (an OpenEnv answer, a request to the engine server: its 500). A new
raw read fails this test, a listed module reading once more too. And the limit's own scan is exact:
a property against the depth of the parsed value."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.outside_json import MAX_DEPTH, OutsideJsonError, json_depth, loads
from t3rl_core.parsers.nesting import structure_depth
from tests.support import source_tree

ROOT = Path(__file__).resolve().parents[2]
THE_READER = "t3rl_core/outside_json.py"
# module -> (raw reads it holds, why what it reads is t3rl's own)
OWN = {
    "launch/config/compose_cache.py": (2, "the composition cache t3rl wrote (its sha256 checked first)"),
    "launch/checks/import_probe.py": (1, "the report of t3rl's own import probe child"),
    "launch/cli/runs_configs.py": (2, "a listing cache file's head t3rl wrote: one path, 24 KB at most"),
    "t3rl_core/envs/tau2/task_steps.py": (2, "the installed tau2's task files (a package t3rl imports)"),
    "t3rl_core/sandbox/child/zygote.py": (1, "the spec its parent sends"),
    "t3rl_core/hooks/mis.py": (1, "the launcher's config, in an environment variable"),
    "t3rl_core/hooks/advantage.py": (1, "the launcher's config, in an environment variable"),
    "t3rl_core/parsers/tool_calls.py": (4, "a model's calls, held to parsers.nesting.MAX_NESTING first"),
    "t3rl_core/envs/call_worker.py": (1, "the call its parent sends"),
    "t3rl_core/envs/bfcl/world.py": (1, "a value t3rl just wrote with json.dumps"),
    "t3rl_core/chat/pieces.py": (1, "the tokenizers library's own state"),
    "t3rl_core/eval/resume.py": (1, "the eval's records t3rl wrote (orjson's own depth limit)"),
}
_MODULES = {"json", "orjson"}


def raw_reads(source: str, nodes: Sequence[ast.AST] | None = None) -> list[int]:
    """Lines parsing JSON text other than through outside_json: json/orjson `loads`/`load`, a
    `JSONDecoder` or its `raw_decode`, an aiohttp body's `.json()`, `from json import loads`. `nodes`:
    the source's, when parsed already (tests/support/source_tree.py)."""
    lines = []
    for node in ast.walk(ast.parse(source)) if nodes is None else nodes:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module in _MODULES
            and any(alias.name in ("loads", "load", "JSONDecoder") for alias in node.names)
        ):
            lines.append(node.lineno)
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, name = node.func.value, node.func.attr
        from_module = isinstance(owner, ast.Name) and owner.id in _MODULES
        if (
            (from_module and name in ("loads", "load", "JSONDecoder"))
            or name == "raw_decode"
            or (name == "json" and not from_module)
        ):
            lines.append(node.lineno)
    return lines


def test_every_json_text_from_outside_is_read_under_the_declared_limit() -> None:
    found: dict[str, list[int]] = {}
    for package in ("launch", "t3rl_core"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name != THE_READER and (lines := raw_reads(source_tree.text(path), source_tree.nodes(path))):
                found[name] = lines
    unlisted = {name: lines for name, lines in found.items() if name not in OWN}
    assert not unlisted, f"read these with t3rl_core.outside_json.loads: {unlisted}"
    more = {name: lines for name, lines in found.items() if len(lines) > OWN[name][0]}
    assert not more, f"new raw JSON reads in modules reading t3rl's own files (outside_json.loads): {more}"
    gone = sorted(set(OWN) - set(found))
    assert not gone, f"no raw JSON read left in {gone}: drop them from OWN"


@pytest.mark.parametrize(
    "source",
    [
        "import json\njson.loads(text)",
        "import json\njson.load(handle)",
        "import orjson\norjson.loads(text)",
        "from json import loads",
        "x = 1\nDECODER.raw_decode(text)",
        "async def f(r):\n    return await r.json()",
    ],
)
def test_the_scan_finds_a_raw_read(source: str) -> None:
    assert raw_reads(source) == [source.count("\n") + 1]


def test_the_scan_leaves_writes_and_the_reader() -> None:
    assert raw_reads("import json\njson.dumps(x)\noutside_json.loads(text, 'a')") == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text('[]{}"\\a', max_size=3), inner, max_size=3)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(
    value=_JSON, wrap=st.integers(0, 2 * MAX_DEPTH), as_bytes=st.booleans(), indent=st.sampled_from([None, 1])
)
def test_the_scan_counts_the_depth_of_what_the_text_parses_to(
    value: Any, wrap: int, as_bytes: bool, indent: int | None
) -> None:
    """Brackets and quotes inside strings, escapes, objects and arrays: the scan's depth is the parsed
    value's, and the reader refuses exactly the texts deeper than the limit."""
    text = "[" * wrap + json.dumps(value, indent=indent) + "]" * wrap
    data: str | bytes = text.encode() if as_bytes else text
    depth = structure_depth(json.loads(text), 10 * MAX_DEPTH)
    assert json_depth(data) == min(depth, MAX_DEPTH + 1)
    if depth <= MAX_DEPTH:
        assert loads(data, "the row") == json.loads(text)
        assert loads(data, "the row", orjson.loads) == json.loads(text)
    else:
        with pytest.raises(OutsideJsonError, match=f"the row nests more than {MAX_DEPTH} levels"):
            loads(data, "the row")


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, "[" * 3000 + "]" * 3000])
def test_deep_or_unclosed_text_is_refused_as_json_is_not_python_s_recursion(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        loads(text.encode(), "the body")
    assert "recursion" not in str(caught.value)
