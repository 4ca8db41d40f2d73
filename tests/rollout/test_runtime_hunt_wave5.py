"""Runtime hunt, wave five: what an engine answers past a turn's stop, and what else wave four left
(docs/explanation/tito.md, "Hunted, wave five")."""

from __future__ import annotations

import asyncio
import json
import unicodedata
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig, RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.parsers.render import call_format, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser, UnwritableTool
from t3rl_core.rollout.episode import EpisodeResult
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import InvalidAction, ToolCall, ToolCallAction
from tests.hooks.slime_fakes import Factory, Progress, slime_args
from tests.rollout.fakes import TOOLS, FixedEngine, ToyEnv, play, task

CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'

# ------------------------------------------------------------------ tokens after a turn's stop


def _answer(ids: list[int], finish: str = "stop") -> Generation:
    return Generation(ids, [-0.25] * len(ids), finish)  # type: ignore[arg-type]


def _trained(result: EpisodeResult) -> list[int]:
    return [t for t, m in zip(result.response_ids, result.loss_mask, strict=True) if m]


def _junk(chat: ChatFormat) -> list[int]:
    # After the stop: more text, a fake tool result and a second stop, as a speculative block may hold.
    return [*chat.encode("junk <tool_response>9</tool_response>"), chat.stop_token_ids[0]]


def test_tokens_after_the_stop_token_are_no_part_of_the_turn(chat: ChatFormat) -> None:
    """Every family: an answer `call <stop> junk <stop>` (finish stop). Before: the junk was trained as
    the model's, the context held a turn no render writes, and the delta closed the turn again after
    it (drift). Now the turn is the call through its stop: the rest is in no list, counted, and the
    episode is a fresh render's prefix."""
    assert chat.family is not None
    stop = chat.stop_token_ids[0]
    call = [
        *chat.encode(render_calls(chat.family.tool_call_parser, [ToolCall("add", {"a": 1, "b": 2})])),
        stop,
    ]
    answer = [*chat.encode("The sum is 3."), stop]
    env = ToyEnv(("Add 1 and 2.",))
    engine = FixedEngine([_answer(call + _junk(chat)), _answer(answer)])
    result = play(chat, env, engine, RolloutConfig(tito_drift_check=True))

    assert result.status == "completed", result.error
    assert _trained(result) == call + answer
    assert result.after_stop_tokens == len(_junk(chat))
    assert result.drift_at is None
    assert isinstance(env.actions[0], ToolCallAction)
    assert not any("junk" in m["content"] for m in result.messages)


def test_a_length_answer_crossing_a_stop_is_the_turn_it_stopped(qwen_chat: ChatFormat) -> None:
    """SGLang's speculative decoding (sgl-project/sglang#31599): an accepted block crosses the stop
    token and the answer says `length`. Before: the call was never stepped (a cut turn) and the junk
    trained; now the turn stopped at its stop token and the call runs."""
    stop = qwen_chat.stop_token_ids[0]
    call = [*qwen_chat.encode(CALL), stop]
    env = ToyEnv(("Add 1 and 2.",))
    engine = FixedEngine(
        [_answer(call + _junk(qwen_chat), "length"), _answer([*qwen_chat.encode("3"), stop])]
    )
    result = play(qwen_chat, env, engine, RolloutConfig(tito_drift_check=True))

    assert result.status == "completed", result.error
    assert isinstance(env.actions[0], ToolCallAction)
    assert _trained(result)[: len(call)] == call and result.drift_at is None


def test_a_stop_on_the_last_token_leaves_the_answer_as_it_is(qwen_chat: ChatFormat) -> None:
    """A call ending on its stop token exactly at the length cap stays a cut turn (never stepped), and
    an abort crossing a stop stays an abort, its tokens through the stop."""
    stop = qwen_chat.stop_token_ids[0]
    call = [*qwen_chat.encode(CALL), stop]
    env = ToyEnv(("Add 1 and 2.",))
    result = play(qwen_chat, env, FixedEngine([_answer(call, "length")]), RolloutConfig())
    assert result.status == "truncated" and env.actions == [] and _trained(result) == call
    assert result.after_stop_tokens == 0

    env = ToyEnv(("Add 1 and 2.",))
    result = play(qwen_chat, env, FixedEngine([_answer(call + _junk(qwen_chat), "abort")]), RolloutConfig())
    assert result.status == "aborted" and env.actions == [] and _trained(result) == call


def test_tokens_after_a_stop_string_are_no_part_of_the_turn(qwen_chat: ChatFormat) -> None:
    """A world's stop string (ReTool's `</code>`, here `</tool_call>`) ends the call at the token that
    completes it: an engine answering on (a fake `<result>` the world never wrote) had the model's own
    result trained and shown before the world's."""
    forged = qwen_chat.encode("\n<result>99</result>\nSo it is 99.")
    env = ToyEnv(("Add 1 and 2.",), inline_calls=True, stop=("</tool_call>",))
    call = qwen_chat.encode(CALL)
    then = [*qwen_chat.encode("So the sum is 3."), qwen_chat.stop_token_ids[0]]
    result = play(qwen_chat, env, FixedEngine([_answer(call + forged), _answer(then)]), RolloutConfig())

    assert result.status == "completed", result.error
    assert _trained(result) == call + then
    assert result.after_stop_tokens == len(forged)
    assert "99" not in qwen_chat.decode(result.response_ids)
    assert result.messages[-1]["content"] == CALL + "\n<result>3</result>\nSo the sum is 3."


@pytest.mark.parametrize("position", ["first", "middle"])
def test_the_first_stop_string_token_is_found_wherever_it_is(qwen_chat: ChatFormat, position: str) -> None:
    """The binary search lands on the token completing the first stop string, at the start too."""
    env = ToyEnv(("Add 1 and 2.",), stop=("STOP",))
    head = [] if position == "first" else qwen_chat.encode("a b c d e f g")
    stop_ids = qwen_chat.encode("STOP")
    answer = head + stop_ids + qwen_chat.encode(" h i STOP j")
    result = play(qwen_chat, env, FixedEngine([_answer(answer)]), RolloutConfig(max_num_steps=1))
    assert _trained(result) == head + stop_ids


# ------------------------------------------------------------------ a tag inside a JSON argument

# (format, reasoning parser): the formats whose arguments are JSON and that have tags to count.
_JSON_TAGGED = [("qwen25", "qwen3"), ("hermes", None), ("deepseekv3", None), ("deepseekv31", None)]


def _tags(parser: ToolCallActionParser) -> list[str]:
    fmt = call_format(parser.tool_call_parser)
    reasoning = parser._reasoning
    return [t for t in (fmt.call_open, fmt.call_close, fmt.block_open, fmt.block_close, reasoning.start,
                        reasoning.end) if t]  # fmt: skip


@pytest.mark.parametrize(("name", "reasoning"), _JSON_TAGGED)
def test_a_tag_inside_a_json_argument_is_answered_with_its_escape(name: str, reasoning: str | None) -> None:
    """Every tag of a JSON format written raw inside an argument's string breaks the call (readers
    count tags in the raw text). Before, the error said 'unbalanced tags' and showed a call with no
    tag in it: the model had no way to learn that the escape writes the same argument. Now the error
    names the tag and its escape, and the call written with it is the call the model meant."""
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=name, reasoning_parser=reasoning), TOOLS)
    for tag in _tags(parser):
        argument = f"a{tag}b"
        action = parser.parse(render_calls(name, [ToolCall("echo", {"text": argument})]))
        assert isinstance(action, InvalidAction), (tag, action)
        escaped = "\\u003c" + tag[1:]
        assert f"The tag {tag} is inside a JSON string: write its '<' there as {escaped}." in action.error
        fixed = render_calls(name, [ToolCall("echo", {"text": argument})]).replace(f"a{tag}b", f"a{escaped}b")
        followed = parser.parse(fixed)
        assert isinstance(followed, ToolCallAction), (tag, followed)
        assert followed.calls == (ToolCall("echo", {"text": argument}),)


def test_no_escape_is_suggested_where_none_is_written_or_none_applies() -> None:
    """A tag broken outside any string, and GLM's raw values (no JSON: no escape exists) get no hint."""
    qwen = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), TOOLS)
    action = qwen.parse('<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n')
    assert isinstance(action, InvalidAction) and "JSON string" not in action.error
    glm = ToolCallActionParser(ParsersConfig(tool_call_parser="glm45"), TOOLS)
    action = glm.parse(render_calls("glm45", [ToolCall("echo", {"text": 'say "a</tool_call>b"'})]))
    assert isinstance(action, InvalidAction) and "JSON string" not in action.error


# ------------------------------------------------------------------ numbers no reader holds as written

_NUMBER_FORMATS = ["qwen25", "llama3", "mistral", "deepseekv3", "glm4_0414"]


@pytest.mark.parametrize("name", _NUMBER_FORMATS)
@pytest.mark.parametrize(
    ("number", "said"),
    [("1e400", "'1e400' is past a float's range"), ("-1e400", "'-1e400' is past a float's range"),
     ("1" + "0" * 5000, "an integer of 5001 digits is more than t3rl reads"),
     ("-" + "9" * 4301, "an integer of 4301 digits is more than t3rl reads")],
)  # fmt: skip
def test_a_number_python_cannot_read_as_written_is_a_format_error(name: str, number: str, said: str) -> None:
    """Before: 1e400 was read as inf (the tool got it; the error, where one came, named 'Infinity', a
    word the model never wrote), and a 5,001-digit integer raised out of the reader: 'could not parse
    the output (ValueError(... use sys.set_int_max_str_digits() to increase the limit))', the message
    of a parser bug, naming a Python call to the model. Now each is the format error naming the
    number, in every JSON format (one decoder: STRICT_JSON's parse_float and parse_int)."""
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=name), TOOLS)
    text = render_calls(name, [ToolCall("add", {"a": 11111, "b": 2})]).replace("11111", number)
    action = parser.parse(text)
    assert isinstance(action, InvalidAction), action
    assert said in action.error and "could not parse" not in action.error and len(action.error) < 2000


@pytest.mark.parametrize("number", ["123456789012345678901234567890", "2.5e-3", "1.5e-400", "-0.0"])
def test_numbers_python_reads_stay_the_call(number: str) -> None:
    """A long integer, a small float and one that underflows to 0.0 (as every IEEE reader reads it)
    are still calls."""
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), TOOLS)
    text = render_calls("qwen25", [ToolCall("add", {"a": 11111, "b": 2})]).replace("11111", number)
    action = parser.parse(text)
    assert isinstance(action, ToolCallAction), action
    assert action.calls[0].arguments["a"] == json.loads(number)


# ------------------------------------------------------------------ a name that only looks offered

_CAFE = {
    "type": "function",
    "function": {"name": "café", "description": "x", "parameters": {"type": "object"}},
}


@pytest.mark.parametrize("name", ["qwen25", "glm45", "llama3", "mistral"])
@pytest.mark.parametrize(
    ("written", "offered"),
    [(unicodedata.normalize("NFD", "café"), "café"), ("Add", "add"), ("ad\u200bd", "add"),
     ("add\u200f", "add"), ("\uff41\uff44\uff44", "add")],
)  # fmt: skip
def test_a_name_differing_only_unseen_says_how(name: str, written: str, offered: str) -> None:
    """Before: 'unknown function 'café'; available functions: café, add, echo', two names that look the
    same (NFD against NFC), and so for a fullwidth 'ａｄｄ'. Now the error names the offered name it
    folds to and both names' code points. The call is still refused: SGLang's detectors and the
    worlds compare names exactly."""
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=name), [_CAFE, *TOOLS])
    action = parser.parse(render_calls(name, [ToolCall(written, {"a": 1})]))
    assert isinstance(action, InvalidAction), action
    assert f"differs from the offered {offered!r} only in case" in action.error, action.error
    assert f"({written!a} against {offered!a})" in action.error


def test_a_name_like_no_offered_one_gets_no_such_hint() -> None:
    """Nor does a name folding to a function offered only later (BFCL's missing functions): errors never
    name those early."""
    late = {"type": "function", "function": {"name": "fly", "parameters": {"type": "object"}}}
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), TOOLS, late_tools=[late])
    for written in ("sub", "FLY"):
        action = parser.parse(render_calls("qwen25", [ToolCall(written, {})]))
        assert isinstance(action, InvalidAction) and "differs" not in action.error
        assert "'fly'" not in action.error and "available functions: add, echo" in action.error


# ------------------------------------------------------------------ a tokenizer with no turn end


class _Tokenizer:
    """What ChatFormat reads of a tokenizer before it needs one to encode: a template, a vocabulary of
    no shipped family, and `eos_token`."""

    chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"

    def __init__(self, eos_token: str | None) -> None:
        self.eos_token = eos_token

    def get_vocab(self) -> dict[str, int]:
        return {"a": 0, "b": 1, "<eos>": 2}


@pytest.mark.parametrize(
    ("eos", "said"), [(None, "declares no eos_token"), ("</s>", "declares the eos_token '</s>', no token of")]
)
def test_a_tokenizer_with_no_turn_end_names_the_family_to_declare(eos: str | None, said: str) -> None:
    """Before: 'the tokenizer lacks the turn-ending tokens [None] of its chat family', for a tokenizer
    of no family at all. Now it says what is missing and where to declare it."""
    with pytest.raises(ValueError) as raised:
        ChatFormat(_Tokenizer(eos))
    assert said in str(raised.value) and "declare the family's tokens with chat.family" in str(raised.value)


# ------------------------------------------------------------------ a tool name the call format cannot write


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("parser", "name"),
    [("qwen25", ""), ("glm4_0414", "Get Weather"), ("glm4_0414", "a\nb"), ("qwen3_coder", "a>b"),
     ("glm45", " trailing "), ("deepseekv3", "ab "), ("deepseekv3", "a\nb")],
)  # fmt: skip
def test_a_tool_name_the_format_cannot_write_is_refused_with_the_tools(parser: str, name: str) -> None:
    """Before: the parser was built, and every call of the tool was refused as the model's format error
    (GLM-4-0414 read `Get Weather` + newline + JSON as no JSON arguments; Qwen3-Coder `<function=a>b>`
    as a call of 'a'; SGLang drops an empty name), a penalty the model could never avoid. Now the tool
    list is refused, naming the tool and the format; the names each format writes are kept."""
    with pytest.raises(UnwritableTool) as raised:
        ToolCallActionParser(ParsersConfig(tool_call_parser=parser), [*TOOLS, _tool(name)])
    assert f"the tool name {name!r} cannot be written in the {parser} call format" in str(raised.value)
    assert "rename it when the data is prepared" in str(raised.value)


@pytest.mark.parametrize(
    "parser", ["qwen25", "glm4_0414", "qwen3_coder", "glm45", "deepseekv3", "llama3", "mistral"]
)
def test_names_every_format_writes_are_kept(parser: str) -> None:
    tools = [*TOOLS, _tool("math.factorial"), _tool("get-weather_v2"), _tool("café")]
    late = [_tool("fly")]
    read = ToolCallActionParser(ParsersConfig(tool_call_parser=parser), tools, late_tools=late)
    for name in ("math.factorial", "café", "fly"):
        action = read.parse(render_calls(parser, [ToolCall(name, {"q": 1})]))
        assert isinstance(action, ToolCallAction) and action.calls[0].name == name, action


def test_a_row_offering_an_unwritable_tool_fails_before_any_model_call(qwen_chat: ChatFormat) -> None:
    runtime = RuntimeConfig.model_validate(slime_args().t3rl)
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    runner = EpisodeRunner(runtime, engine, env_factory=_Toys(), chat=qwen_chat, reward=Progress())
    row = task(("Add 1 and 2.",))
    row["metadata"]["tools"] = [*TOOLS, _tool("")]
    result = asyncio.run(runner.run(row))[0]
    assert result.status == "failed" and result.failure is not None, result.error
    assert result.failure.label == "env/UnwritableTool" and result.num_model_calls == 0


class _Toys(Factory):
    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        return ToyEnv(row["metadata"]["questions"])
