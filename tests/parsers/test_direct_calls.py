"""Qwen2.5 calls read once (`tool_calls._read_directly`) parse as SGLang's detector then t3rl's reading
of what it hands back: the same action, of the same types, on generated texts; and texts where the two
readings would differ go through SGLang's detector."""

from __future__ import annotations

import functools
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from t3rl_core.config import ParsersConfig
from t3rl_core.parsers import tool_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import ToolCallAction

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "cd", "parameters": {"type": "object"}}},
]
# (A tool of an empty name, whose calls SGLang's detector drops, is refused with its tool list:
# tests/rollout/test_runtime_hunt_wave5.py; a call of the name '' is an unknown function to both.)
LATE = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]


@functools.cache
def _parsers(name: str = "qwen25") -> tuple[ToolCallActionParser, ToolCallActionParser]:
    """(the parser as built, the same parser with the direct reading off), built once per process when a
    test first reads them, not at collection (SGLang's detector imports sglang: ~0.3 s per process, and
    every xdist worker collects the whole suite)."""
    config = ParsersConfig(tool_call_parser=name)
    direct = ToolCallActionParser(config, TOOLS, late_tools=LATE)
    through_sglang = ToolCallActionParser(config, TOOLS, late_tools=LATE)
    through_sglang._direct_names = None
    return direct, through_sglang


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
# JSON texts the strict reading refuses or json.dumps writes back differently: a float beyond range,
# NaN, a key twice, a value that is no object.
_ODD_VALUES = st.sampled_from(
    [
        '{"n": 1e400}',
        '{"a": {"b": [2, -1e999]}}',
        '{"n": ' + "9" * 400 + ".5}",
        '{"n": NaN}',
        '{"a": 1, "a": 2}',
        "Infinity",
        "[1]",
        '"x"',
        "null",
    ]
)
_NAMES = st.sampled_from(["get_weather", "cd", "ls", "", "unknown"]).map(json.dumps) | st.sampled_from(
    ["1", "null"]
)


@st.composite
def _call_json(draw: st.DrawFn) -> str:
    """One call's JSON text: a name, its arguments under "arguments", "parameters", both or neither."""
    fields = [f'"name": {draw(_NAMES)}']
    for key in draw(st.sampled_from([["arguments"], ["parameters"], [], ["arguments", "parameters"]])):
        value = draw(_ODD_VALUES) if draw(st.integers(0, 5)) == 0 else json.dumps(draw(_JSON))
        fields.append(f'"{key}": {value}')
    if draw(st.booleans()):
        fields.reverse()
    body = "{" + ", ".join(fields) + "}"
    return draw(st.sampled_from([body] * 6 + ["[" + body + "]", body[:-1], " " + body + " \t"]))


@st.composite
def _text(draw: st.DrawFn) -> str:
    """Calls in the Qwen2.5 tags, mostly as the template writes them, sometimes with a newline missing
    or doubled, text around and between them, a tag alone."""
    newline = st.sampled_from(["\n"] * 12 + ["", "\n\n", " \n", "\r\n"])
    parts = [draw(st.sampled_from(["", "", "I will call.\n", "<think>x</think>\n"]))]
    for _ in range(draw(st.integers(1, 3))):
        parts.append(f"<tool_call>{draw(newline)}{draw(_call_json())}{draw(newline)}</tool_call>")
        parts.append(draw(st.sampled_from(["\n", "\n", "", " and ", "\n<tool_call>\n", "</tool_call>"])))
    return "".join(parts)


@settings(max_examples=200, deadline=None)
@given(_text())
# A name SGLang drops, a float beyond range (Infinity written back), a newline short before a tag and
# after one.
@example('<tool_call>\n{"name": "", "arguments": {}}\n</tool_call>')
@example('<tool_call>\n{"name": "cd", "arguments": {"a": [1e400]}}\n</tool_call>')
@example('<tool_call>\n{"name": "cd"}</tool_call>\n<tool_call>\n{"name": "ls"}\n</tool_call>')
@example('<tool_call>{"name": "cd"}\n</tool_call>\n<tool_call>\n{"name": "ls"}\n</tool_call>')
def test_direct_reading_parses_as_sglang(text: str) -> None:
    parser, through = _parsers()
    direct, through_sglang = parser.parse(text), through.parse(text)
    # repr, not ==: 1 == 1.0 == True and 0.0 == -0.0, but the world receives the values as typed.
    assert repr(direct) == repr(through_sglang), text


def test_the_direct_reading_is_taken_for_template_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[int] = []
    real = tool_calls._read_directly

    def counting(*args):
        calls = real(*args)
        taken.append(calls is not None)
        return calls

    monkeypatch.setattr(tool_calls, "_read_directly", counting)
    text = (
        '<tool_call>\n{"name": "cd", "arguments": {"folder": "a", "n": [1, 2.5, -0.0, null]}}\n</tool_call>\n'
        '<tool_call>\n{"name": "ls", "parameters": {}}\n</tool_call>'
    )
    direct, through_sglang = _parsers()
    action = direct.parse(text)
    assert isinstance(action, ToolCallAction) and [call.name for call in action.calls] == ["cd", "ls"]
    assert repr(action) == repr(through_sglang.parse(text))
    # A float beyond range is refused by the strict reading of the block, before either reading.
    beyond = '<tool_call>\n{"name": "cd", "arguments": {"n": 1e400}}\n</tool_call>'
    assert repr(direct.parse(beyond)) == repr(through_sglang.parse(beyond))
    assert taken == [True]


@pytest.mark.parametrize("name", ["hermes", "glm45", "llama3", "deepseekv3"])
def test_other_formats_have_no_direct_reading(name: str) -> None:
    assert _parsers(name)[0]._direct_names is None


def test_the_qwen_alias_reads_directly() -> None:
    assert _parsers("qwen")[0]._direct_names == frozenset({"get_weather", "cd", "ls"})
