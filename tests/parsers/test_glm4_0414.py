"""GLM-4-0414's native tool calls (GLM-4-9B-0414): t3rl's detector on text in the format the checkpoint's
chat template teaches (`<|assistant|>NAME` + newline + JSON arguments, no tags, turn ended by
<|observation|>), the template that renders it, and the fact that no SGLang 0.5.23 parser reads it."""

from __future__ import annotations

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import launch_argv
from t3rl_core.parsers.glm4_0414 import segments
from t3rl_core.parsers.own import OWN_TOOL_CALL_PARSERS
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
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "file.read", "description": "Read a file.", "parameters": {"type": "object"}},
    },
]
# What GLM-4-9B-0414 writes after <|assistant|> (the final <|observation|> is its turn-ending token).
ONE_CALL = 'get_weather\n{"city": "Beijing"}<|observation|>'
TWO_CALLS = (
    'get_weather\n{"city": "Beijing"}<|assistant|>file.read\n{"path": "a.txt", "lines": [1]}<|observation|>'
)
ANSWER = "\nIt is sunny in Beijing: 25°C."


def native() -> ToolCallActionParser:
    return ToolCallActionParser(ParsersConfig(tool_call_parser="glm4_0414"), TOOLS)


def test_one_native_call() -> None:
    action = native().parse(ONE_CALL)
    assert isinstance(action, ToolCallAction)
    assert action.calls == (ToolCall(name="get_weather", arguments={"city": "Beijing"}),)


def test_two_calls_are_two_assistant_segments() -> None:
    action = native().parse(TWO_CALLS)
    assert isinstance(action, ToolCallAction)
    assert [c.name for c in action.calls] == ["get_weather", "file.read"]
    assert action.calls[1].arguments == {"path": "a.txt", "lines": [1]}


@pytest.mark.parametrize(
    "text",
    [
        ANSWER,
        'The result as JSON:\n{"temp": 25}',  # a first line with spaces is prose, not a function name
        "get_weather is the tool I would use.",  # a name without arguments is no call
    ],
)
def test_answers_are_not_calls(text: str) -> None:
    assert isinstance(native().parse(text), AnswerAction)


def test_malformed_calls_are_reported_to_the_model() -> None:
    bad_json = native().parse('get_weather\n{"city": "Beijing"<|observation|>')
    assert isinstance(bad_json, InvalidAction) and "not valid JSON" in bad_json.error
    unknown = native().parse('get_time\n{"zone": "UTC"}<|observation|>')
    assert isinstance(unknown, InvalidAction) and "unknown function 'get_time'" in unknown.error
    assert "get_weather" in unknown.error  # the functions that exist


def test_segments_keep_text_beside_calls() -> None:
    found = segments('\nLet me check.<|assistant|>get_weather\n{"city": "Rome"}')
    assert [(s.name, s.arguments) for s in found] == [(None, ""), ("get_weather", '{"city": "Rome"}')]


def test_the_template_writes_the_native_turns() -> None:
    from tests.rollout.fakes import shared_tokenizer_dir

    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("glm4_0414"), "glm4_0414")
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Beijing"}}}
    messages = [
        {"role": "user", "content": "Weather in Beijing?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": '{"temp": 25}'},
        {"role": "assistant", "content": "It is 25°C."},
    ]
    text = chat.render(messages, TOOLS, add_generation_prompt=False)
    assert text.startswith(
        '[gMASK]<sop><|system|>\n# 可用工具\n\n## get_weather\n\n{\n    "name": "get_weather"'
    )
    assert '<|user|>\nWeather in Beijing?<|assistant|>get_weather\n{"city": "Beijing"}' in text
    assert text.endswith('<|observation|>\n{"temp": 25}<|assistant|>\nIt is 25°C.')
    # What the model wrote is kept as written: a call turn (first line names a tool) gets no newline.
    as_written = [messages[0], {"role": "assistant", "content": ONE_CALL.removesuffix("<|observation|>")}]
    assert chat.render(as_written, TOOLS).endswith('<|assistant|>get_weather\n{"city": "Beijing"}')


def test_the_eval_server_is_not_given_a_parser_only_t3rl_knows() -> None:
    config = ServerConfig()
    own = launch_argv("/ckpt", tp=1, tool_call_parser="glm4_0414", reasoning_parser=None, config=config)
    assert "--tool-call-parser" not in own
    sglang = launch_argv("/ckpt", tp=1, tool_call_parser="glm45", reasoning_parser=None, config=config)
    assert sglang[sglang.index("--tool-call-parser") + 1] == "glm45"


def test_no_sglang_parser_reads_the_native_format() -> None:
    """Why t3rl ships its own detector: every parser of the pinned SGLang misses these calls."""
    from t3rl_core.parsers.sglang_loader import load

    sglang = load()
    tools = [sglang.Tool.model_validate(tool) for tool in TOOLS]
    names = sorted(set(sglang.FunctionCallParser.ToolCallParserEnum) - set(OWN_TOOL_CALL_PARSERS))
    assert len(names) == 44
    readers = []
    for name in names:
        try:
            _, calls = sglang.FunctionCallParser(tools, name).parse_non_stream(TWO_CALLS)
        except Exception:  # a parser that chokes on the text does not read it either
            continue
        if [c.name for c in calls] == ["get_weather", "file.read"]:
            readers.append(name)
    assert readers == []
    _, calls = sglang.FunctionCallParser(tools, "glm4_0414").parse_non_stream(TWO_CALLS)
    assert [c.name for c in calls] == ["get_weather", "file.read"]
