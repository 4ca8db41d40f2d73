"""render → SGLang's own parser (same name) gives the calls back, for every supported format."""

from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.config import ParsersConfig
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.sglang_loader import tool_call_parser_names
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import ToolCall, ToolCallAction

SCHEMA = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "b": {"type": "boolean"},
        "items": {"type": "array", "items": {"type": "string"}},
        "nested": {"type": "object"},
    },
}
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": SCHEMA}} for name in ("move_file", "ls")
]
# Formats that write string values raw between tags: a value may not contain the tag syntax itself.
RAW_STRING_FORMATS = {"glm", "glm45", "glm47", "qwen3_coder"}


@functools.cache
def parser(name: str) -> ToolCallActionParser:
    """The parser of format `name`, built once per process when a test first reads it, not at collection
    (SGLang's detectors import sglang: ~0.3 s per process, and every xdist worker collects the suite)."""
    return ToolCallActionParser(ParsersConfig(tool_call_parser=name), TOOLS)


def _strings(raw: bool) -> st.SearchStrategy[str]:
    if raw:  # no markup characters, no surrounding whitespace (XML-style values are trimmed)
        plain = st.characters(blacklist_characters="<>&\r", blacklist_categories=["Cs", "Cc"])
        # qwen3_coder cannot spell the string "null" in any case (see the test of JSON-like strings).
        return st.text(plain, max_size=12).map(str.strip).filter(lambda text: text.lower() != "null")
    return st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)


def _arguments(raw: bool) -> st.SearchStrategy[dict]:
    text = _strings(raw)
    return st.fixed_dictionaries(
        {},
        optional={
            "s": text,
            "n": st.integers(-(10**6), 10**6),
            "x": st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: round(v, 3)),
            "b": st.booleans(),
            "items": st.lists(text, max_size=3),
            "nested": st.dictionaries(st.sampled_from(["k", "v"]), st.integers(0, 9) | text, max_size=2),
        },
    )


def test_every_rendered_format_is_a_registered_sglang_parser() -> None:
    assert set(FORMATS) <= set(tool_call_parser_names())


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_roundtrip_fixed_calls(name: str) -> None:
    calls = (
        ToolCall("move_file", {"s": 'a "quoted"\nline, ünïcode', "n": 3, "b": True, "items": ["x", "y"]}),
        ToolCall("ls", {}),
    )
    if name in RAW_STRING_FORMATS:
        calls = (ToolCall("move_file", {"s": "report.txt", "n": 3, "b": True, "items": ["x", "y"]}), calls[1])
    action = parser(name).parse(render_calls(name, calls))
    assert isinstance(action, ToolCallAction), action
    assert action.calls == calls


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_roundtrip_random_arguments(name: str, data: st.DataObject) -> None:
    raw = name in RAW_STRING_FORMATS
    calls = tuple(
        ToolCall(data.draw(st.sampled_from(["move_file", "ls"])), data.draw(_arguments(raw)))
        for _ in range(data.draw(st.integers(1, 3)))
    )
    action = parser(name).parse(render_calls(name, calls))
    assert isinstance(action, ToolCallAction), action
    assert action.calls == calls


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize(
    "value",
    # JSON-like, quoted either way (GLM's parser strips one pair of quotes from a string argument), and
    # a JSON string's escaped spelling (GLM's parser reads it unescaped).
    ["0E0", "12", "-1.5", "true", "null", "NULL", "Null", '"x"', "[1]", "''", "'x'", '\\"x\\"', '""'],
)
def test_strings_that_look_like_json_stay_strings(name: str, value: str) -> None:
    calls = (ToolCall("move_file", {"s": value}),)
    action = parser(name).parse(render_calls(name, calls))
    assert isinstance(action, ToolCallAction), action
    if name == "qwen3_coder" and value.lower() == "null":
        # The format cannot spell the string "null" in any case: SGLang's parser reads it as null for
        # every type.
        assert action.calls == (ToolCall("move_file", {"s": None}),)
    else:
        assert action.calls == calls
