"""Real model outputs of each family through SGLang's parsers, and malformed ones → InvalidAction."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.config import ParsersConfig
from t3rl_core.parsers import tool_calls
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "cd",
            "description": "Change directory.",
            "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}},
        },
    },
]


def parser(
    tool_call_parser: str, reasoning_parser: str | None = None, think_tags=None
) -> ToolCallActionParser:
    config = ParsersConfig(
        tool_call_parser=tool_call_parser, reasoning_parser=reasoning_parser, think_tags=think_tags
    )
    return ToolCallActionParser(config, TOOLS)


def _once(*args: Any, **kwargs: Any) -> Callable[[], ToolCallActionParser]:
    """parser(*args, **kwargs), built once per process when a test first calls for it, not at collection
    (SGLang's detectors import sglang: ~0.3 s per process, and every xdist worker collects the suite)."""
    return functools.cache(functools.partial(parser, *args, **kwargs))


QWEN3 = _once("qwen25", "qwen3")
HERMES_T3RL = _once("hermes", think_tags=("<thinking>", "</thinking>"))
DEEPSEEK_V3 = _once("deepseekv3")
LLAMA3 = _once("llama3")
GLM45 = _once("glm45", "glm45")
GLM47 = _once("glm47", "glm45")


def test_qwen3_think_then_parallel_calls() -> None:
    text = (
        "<think>\nThe user wants the weather in two cities.\n</think>\n\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Tokyo", "days": 2}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    )
    action = QWEN3().parse(text)
    assert isinstance(action, ToolCallAction)
    assert action.calls == (
        ToolCall("get_weather", {"location": "Tokyo", "days": 2}),
        ToolCall("get_weather", {"location": "Paris"}),
    )
    assert action.reasoning == "The user wants the weather in two cities."
    assert "<think>" not in action.text


def test_t3rl_thinking_tags_with_hermes_one_line_calls() -> None:
    text = (
        "<thinking>I must enter the documents folder first.</thinking>\n"
        '<tool_call>{"name": "cd", "arguments": {"folder": "documents"}}</tool_call>'
    )
    action = HERMES_T3RL().parse(text)
    assert action == ToolCallAction(
        calls=(ToolCall("cd", {"folder": "documents"}),),
        text='<tool_call>{"name": "cd", "arguments": {"folder": "documents"}}</tool_call>',
        reasoning="I must enter the documents folder first.",
        content="",
    )


def test_plain_answer_after_reasoning() -> None:
    answer = HERMES_T3RL().parse("<thinking>All done.</thinking>\nThe folder now holds 3 files.")
    assert answer == AnswerAction(text="The folder now holds 3 files.", reasoning="All done.")
    assert QWEN3().parse("It is sunny in Tokyo.") == AnswerAction(text="It is sunny in Tokyo.")


def test_deepseek_v3_calls() -> None:
    text = (
        "Let me check both.<｜tool▁calls▁begin｜>"
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
        '```json\n{"location": "Tokyo"}\n```<｜tool▁call▁end｜>\n'
        '<｜tool▁call▁begin｜>function<｜tool▁sep｜>cd\n```json\n{"folder": "tmp"}\n```<｜tool▁call▁end｜>'
        "<｜tool▁calls▁end｜>"
    )
    action = DEEPSEEK_V3().parse(text)
    assert isinstance(action, ToolCallAction)
    assert action.calls == (ToolCall("get_weather", {"location": "Tokyo"}), ToolCall("cd", {"folder": "tmp"}))


def test_llama3_json_calls() -> None:
    action = LLAMA3().parse('{"name": "get_weather", "parameters": {"location": "Tokyo"}}')
    assert action == ToolCallAction(
        calls=(ToolCall("get_weather", {"location": "Tokyo"}),),
        text='{"name": "get_weather", "parameters": {"location": "Tokyo"}}',
        content="",  # a turn of calls without <|python_tag|> is calls only
    )
    both = LLAMA3().parse(
        '<|python_tag|>{"name": "cd", "parameters": {"folder": "a"}}; {"name": "cd", "parameters": {}}'
    )
    assert isinstance(both, ToolCallAction)
    assert both.calls == (ToolCall("cd", {"folder": "a"}), ToolCall("cd", {}))


def test_glm45_and_glm47_calls_with_schema_types() -> None:
    glm45 = (
        "\n<think>Check the weather.</think>\n<tool_call>get_weather\n<arg_key>location</arg_key>\n"
        "<arg_value>New York</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
    )
    action = GLM45().parse(glm45)
    assert isinstance(action, ToolCallAction)
    assert action.calls == (ToolCall("get_weather", {"location": "New York", "days": 3}),)
    assert action.reasoning == "Check the weather."
    glm47 = "<tool_call>get_weather<arg_key>location</arg_key><arg_value>Tokyo</arg_value></tool_call>"
    assert GLM47().parse(glm47).calls == (ToolCall("get_weather", {"location": "Tokyo"}),)


@pytest.mark.parametrize(
    ("action_parser", "text", "message"),
    [
        (QWEN3, "<think>never closed\nanswer", "never closed"),
        (QWEN3, "<think>a</think><think>b</think>x", "at most one reasoning block"),
        (QWEN3, "stray</think> answer", "never opened"),
        (HERMES_T3RL, "</thinking>x<thinking>", "comes before"),
        (
            QWEN3,
            '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Tokyo"}\n</tool_call>',
            "invalid JSON",
        ),
        (QWEN3, '<tool_call>\n{"name": "rm", "arguments": {}}\n</tool_call>', "unknown function 'rm'"),
        (QWEN3, '<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n', "unbalanced tags"),
        (QWEN3, '<tool_call>\n{"name": "cd", "arguments": [1, 2]}\n</tool_call>', "must be a JSON object"),
        (QWEN3, '<tool_call>\n{"arguments": {}}\n</tool_call>', '"name" string'),
        (QWEN3, '<tool_call>{"name": "cd", "arguments": {}}</tool_call>', "could not be parsed"),
        (QWEN3, "</tool_call><tool_call>", "nested or out of order"),
        (
            DEEPSEEK_V3,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>cd\n```json\n{folder: x}\n```"
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "invalid JSON",
        ),
        (
            DEEPSEEK_V3,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>cd\n"
            '```json\n{"folder": "x"}\n```<｜tool▁call▁end｜>',
            "unbalanced tags",
        ),
        (LLAMA3, '{"name": "get_weather", "parameters": {"location": "Tokyo"}', "invalid JSON"),
        (LLAMA3, '{"name": "fly", "parameters": {}}', "unknown function 'fly'"),
        (
            GLM45,
            "<tool_call>fly\n<arg_key>to</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>",
            "unknown function",
        ),
        (GLM45, "<tool_call>cd\n<arg_key>folder</arg_key>\n<arg_value>a</arg_value>\n", "unbalanced tags"),
    ],
)
def test_malformed_outputs_become_invalid_actions(action_parser, text: str, message: str) -> None:
    action = action_parser().parse(text)
    assert isinstance(action, InvalidAction), action
    assert message in action.error
    assert action.text == text


def test_errors_show_the_expected_format() -> None:
    action = QWEN3().parse('<tool_call>\n{"name": "cd", "arguments": {\n</tool_call>')
    assert (
        '<tool_call>\n{"name": "get_weather", "arguments": {"argument": "value"}}\n</tool_call>'
        in action.error
    )


def test_unknown_parser_names_fail_at_construction() -> None:
    with pytest.raises(ValueError, match=r"unknown tool_call_parser 'qwen99'.*qwen25"):
        parser("qwen99")
    with pytest.raises(ValueError, match="unknown reasoning_parser 'thinky'"):
        parser("qwen25", "thinky")


FRAGMENTS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "\n",
    '{"name": "cd", "arguments": {"folder": "x"}}',
    '{"name": ',
    "}",
    "<｜tool▁calls▁begin｜>",
    "<｜tool▁call▁begin｜>",
    "<｜tool▁sep｜>",
    "<arg_key>",
    "<arg_value>",
    "<|python_tag|>",
    "hello",
    ";",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=12))
def test_parsing_never_raises(pieces: list[str]) -> None:
    text = "".join(pieces)
    for action_parser in (QWEN3, HERMES_T3RL, DEEPSEEK_V3, LLAMA3, GLM45):
        action = action_parser().parse(text)
        assert isinstance(action, ToolCallAction | AnswerAction | InvalidAction)
        if isinstance(action, ToolCallAction):
            assert action.calls and all(call.name in ("get_weather", "cd") for call in action.calls)


def test_t3rl_recipe_qwen3_thinking_rules_on_thinking_tags():
    """T3RL's instruct2507 recipe: SGLang's `qwen3-thinking` (reasoning forced open) on <thinking> tags."""
    recipe = parser("qwen", "qwen3-thinking", ("<thinking>", "</thinking>"))
    call = '<thinking>go</thinking>\n<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n</tool_call>'
    action = recipe.parse(call)
    assert isinstance(action, ToolCallAction) and action.reasoning == "go"
    assert action.calls == (ToolCall("cd", {"folder": "a"}),)
    forced = recipe.parse("go</thinking>Done.")  # forced open: text before the end tag is reasoning
    assert isinstance(forced, AnswerAction) and (forced.reasoning, forced.text) == ("go", "Done.")
    for bad in ("<think>x</think>ok", "no reasoning at all"):
        assert isinstance(recipe.parse(bad), InvalidAction), bad
    # Without the override the same parser reads Qwen's own <think> tags.
    plain = parser("qwen", "qwen3-thinking").parse("<think>x</think>ok")
    assert isinstance(plain, AnswerAction) and plain.reasoning == "x"
    # `qwen` (SGLang's alias of qwen25) takes only the template's multi-line block.
    one_line = '<thinking>go</thinking><tool_call>{"name": "cd", "arguments": {"folder": "a"}}</tool_call>'
    assert isinstance(recipe.parse(one_line), InvalidAction)


@pytest.mark.parametrize(
    ("parser_name", "text", "content"),
    [
        (
            "hermes",
            'Checking.\n<tool_call>{"name": "cd", "arguments": {}}</tool_call>\nDone?',
            "Checking.\n\nDone?",
        ),
        ("qwen25", '<tool_call>\n{"name": "cd", "arguments": {}}\n</tool_call>\n', ""),
        ("llama3", '{"name": "cd", "parameters": {}}', ""),
        ("llama3", 'Checking.<|python_tag|>{"name": "cd", "parameters": {}}', "Checking."),
        ("mistral", 'Checking. [TOOL_CALLS] [{"name": "cd", "arguments": {}}] Done?', "Checking.  Done?"),
    ],
)
def test_the_text_outside_the_calls_is_reported(parser_name, text, content):
    tools = [{"name": "cd", "parameters": {"type": "object", "properties": {}}}]
    action = ToolCallActionParser(ParsersConfig(tool_call_parser=parser_name), tools).parse(text)
    assert isinstance(action, ToolCallAction) and action.content == content


def _format_texts(parser_name: str) -> list[str]:
    """Calls to known and unknown functions, one or two per text, and a plain answer, in one format."""
    weather = ToolCall(name="get_weather", arguments={"location": "Tokyo", "days": 2})
    cd = ToolCall(name="cd", arguments={"folder": "docs"})
    unknown = ToolCall(name="ls", arguments={})
    calls = ([weather], [weather, cd], [cd, weather], [unknown], [weather, unknown])
    return [*(render_calls(parser_name, batch) for batch in calls), "It is sunny in Tokyo."]


@pytest.mark.parametrize("parser_name", sorted(FORMATS))
def test_tool_index_built_once_parses_as_sglang_rebuilding_it(
    parser_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = parser(parser_name)
    monkeypatch.setattr(tool_calls, "_index_tools_once", lambda detector, tools: None)
    rebuilt = parser(parser_name)
    assert "_get_tool_indices" not in vars(rebuilt._calls.detector)  # SGLang's own method, per parse
    for text in _format_texts(parser_name):
        assert cached.parse(text) == rebuilt.parse(text), text


def test_the_tool_index_is_built_once_per_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    detector_class = type(parser("qwen25")._calls.detector)
    original = detector_class._get_tool_indices

    def counting(self, tools):
        built.append(len(tools))
        return original(self, tools)

    monkeypatch.setattr(detector_class, "_get_tool_indices", counting)
    qwen = parser("qwen25")
    for text in _format_texts("qwen25") * 3:
        qwen.parse(text)
    assert built == [len(TOOLS)]


def test_tool_lists_share_each_distinct_tool_and_parse_as_their_own() -> None:
    """A tool held by several tool lists is validated once; each list's parser still knows only its
    own tools (an unknown name is refused with that list's names)."""
    config = ParsersConfig(tool_call_parser="qwen25")
    renamed = {**TOOLS[1], "function": {**TOOLS[1]["function"], "name": "ls"}}
    first, second = ToolCallActionParser(config, TOOLS), ToolCallActionParser(config, [TOOLS[1], renamed])
    assert first._calls.detector is not second._calls.detector
    shared, own = second._calls.tools
    assert shared is first._calls.tools[1] and own is not first._calls.tools[1]
    call = '<tool_call>\n{"name": "cd", "arguments": {"folder": "x"}}\n</tool_call>'
    for parsed in (first.parse(call), second.parse(call)):
        assert isinstance(parsed, ToolCallAction) and parsed.calls == (ToolCall("cd", {"folder": "x"}),)
    refused = second.parse(call.replace('"cd"', '"get_weather"'))
    assert isinstance(refused, InvalidAction) and "cd, ls" in refused.error
