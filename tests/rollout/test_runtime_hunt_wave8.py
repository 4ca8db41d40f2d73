"""Runtime hunt, wave eight: what wave seven left (CRLF and tabs inside a call block, call-shaped text
inside a tagless answer) and the kinds found after (docs/explanation/tito.md, "Hunted, wave eight")."""

from __future__ import annotations

import pytest

from t3rl_core.config import ParsersConfig
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS

_ADD = ToolCall("add", {"a": 1, "b": 2})


@pytest.fixture(scope="module")
def parsers() -> dict[str, ToolCallActionParser]:
    return {
        name: ToolCallActionParser(ParsersConfig(tool_call_parser=name, reasoning_parser=None), TOOLS)
        for name in sorted(FORMATS)
    }


# ------------------------------------------------------------ kind 1: the layout inside a call block

# The formats whose detector reads the template's exact whitespace around its tags (the others read a
# CRLF call as it is: hermes, Qwen3-Coder).
_LAYOUT_FORMATS = ("deepseekv3", "glm", "glm45", "qwen", "qwen25")


@pytest.mark.parametrize("name", _LAYOUT_FORMATS)
@pytest.mark.parametrize(("label", "old", "new"), [("crlf", "\n", "\r\n"), ("space", "\n", " \n")])
def test_a_call_in_other_line_breaks_names_them(
    parsers: dict[str, ToolCallActionParser], name: str, label: str, old: str, new: str
) -> None:
    """`<tool_call>\\r\\n{…}\\r\\n</tool_call>` (and GLM-4.5's, DeepSeek's fences): SGLang's detector drops
    it, and the model was told "1 of 1 tool call(s) could not be parsed" beside an example it could not
    tell apart. Now the error names each run of whitespace and what the format writes there, and names
    it only when the call written with the format's layout is read (the fix validates)."""
    text = "Adding.\n" + render_calls(name, [_ADD]).replace(old, new)
    action = parsers[name].parse(text)
    assert isinstance(action, InvalidAction), action
    assert "the line breaks around the format's tags are not the format's" in action.error
    assert f"{new!r} " in action.error and f"(the format writes {old!r})" in action.error


@pytest.mark.parametrize("name", ("qwen", "qwen25"))
def test_a_tab_or_no_line_break_inside_a_qwen_call_is_named(
    parsers: dict[str, ToolCallActionParser], name: str
) -> None:
    call = render_calls(name, [_ADD])
    tabbed = parsers[name].parse(call.replace("\n", "\n\t"))
    assert isinstance(tabbed, InvalidAction) and "'\\n\\t' after <tool_call>" in tabbed.error
    glued = parsers[name].parse(call.replace("\n", ""))
    assert (
        isinstance(glued, InvalidAction) and "'' after <tool_call> (the format writes '\\n')" in glued.error
    )


def test_the_formats_layouts_stay_calls(parsers: dict[str, ToolCallActionParser]) -> None:
    """No over-refusal: a call in the template's own layout, or in a tab-indented GLM layout the
    detector reads, is a call; of two calls, only the one in other line breaks is counted and named."""
    for name in _LAYOUT_FORMATS:
        assert isinstance(parsers[name].parse(render_calls(name, [_ADD])), ToolCallAction)
    tabbed = render_calls("glm45", [_ADD]).replace("\n", "\n\t")
    assert isinstance(parsers["glm45"].parse(tabbed), ToolCallAction)
    two = render_calls("qwen25", [_ADD]) + "\n" + render_calls("qwen25", [_ADD]).replace("\n", "\r\n")
    action = parsers["qwen25"].parse(two)
    assert (
        isinstance(action, InvalidAction)
        and "1 of 2 tool call(s) could not be parsed: the line" in action.error
    )


# ------------------------------------------------------------ kind 2: a call after text, tagless formats


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("llama3", 'Sure.\n{"name": "add", "parameters": {"a": 1, "b": 2}}'),
        (
            "llama3",
            'Sure.\n{"name": "add", "parameters": {"a": 1}}; {"name": "echo", "parameters": {"text": "x"}}',
        ),
        ("glm4_0414", 'Sure.\nadd\n{"a": 1, "b": 2}'),
    ],
)
def test_a_call_after_text_in_a_tagless_format_is_a_format_error(
    parsers: dict[str, ToolCallActionParser], name: str, text: str
) -> None:
    """Llama-3 and GLM-4-0414 define a call as the whole turn (segment): `Sure.\\n{call}` was an answer
    holding the call's text, the world ended the turn on it and nothing told the model why its call
    never ran. Declared now: a turn ending, from a line start, with calls of offered functions the
    format reads without error is a call written after text, a format error saying how to write it."""
    action = parsers[name].parse(text)
    assert isinstance(action, InvalidAction), action
    assert "a call written after text" in action.error
    fix = "<|python_tag|>" if name == "llama3" else "<|assistant|>"
    assert fix in action.error
    # The fix it names is read as the call (with the text as its content where the format keeps one).
    before, _, call = text.partition("\n")
    fixed = parsers[name].parse(before + fix + call)
    assert isinstance(fixed, ToolCallAction) and fixed.calls[0] == ToolCall("add", fixed.calls[0].arguments)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("llama3", 'Here is the JSON you asked for:\n{"x": 1}'),
        ("llama3", 'Sure.\n{"name": "add", "parameters": {"a": 1}} is what I would send.'),
        ("llama3", 'Inline {"name": "add", "parameters": {"a": 1}}'),
        ("llama3", 'Sure.\n{"name": "weather", "parameters": {}}'),
        ("glm4_0414", 'Sure.\nadd\n{"a": 1} is the call.'),
        ("glm4_0414", "Sure.\nadd\n[1, 2]"),
        ("glm4_0414", 'The word add\n{"a": 1}'),
    ],
)
def test_answers_quoting_json_stay_answers(
    parsers: dict[str, ToolCallActionParser], name: str, text: str
) -> None:
    """No over-refusal: JSON of no offered function, a call with text after it, or one not on its own
    line is an answer, as before."""
    assert isinstance(parsers[name].parse(text), AnswerAction)
