"""Is a chat template fit for t3rl? It renders a tool-use conversation, it tokenizes (turn-ending tokens
are single tokens, text round-trips), an episode's incremental token deltas (TITO) equal a fresh render
of the same conversation, and the model's SGLang parsers read back the calls (and reasoning) the
template itself writes for an assistant turn. What `t3rl check-template` runs.

With `parsers.think_tags` the reasoning block is the prompt's, not the template's: the model writes
`<thinking>…</thinking>` into its turn's text, which an episode keeps verbatim, so the template's own
rendering of `reasoning_content` never reaches a trajectory. The parsers are then checked on the turn
as the model must write it: that block, then the template's calls. With a forced-open reasoning
parser (T3RL's `qwen3-thinking` on `<thinking>`), a turn that never closes the block is a format error
(SGLang's detector alone would end the reasoning at `<tool_call>` and read the call, or swallow a plain
answer as reasoning); see docs/explanation/thinking-tags.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from t3rl_core.counts import counted
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.reference import as_model_output
from t3rl_core.parsers.render import render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import InvalidAction, Message, ToolCall, ToolCallAction

if TYPE_CHECKING:
    from t3rl_core.chat.format import ChatFormat
    from t3rl_core.config import ParsersConfig

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city for the next days.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
CALL = ToolCall("get_weather", {"city": "Paris", "days": 2})
REASONING = "The user wants the weather, so I call get_weather."
SYSTEM: Message = {"role": "system", "content": "You are a helpful assistant."}
USER: Message = {"role": "user", "content": "What is the weather in Paris?"}
TOOL_RESULT: Message = {"role": "tool", "name": "get_weather", "content": '{"celsius": 21}'}
FOLLOW_UP: Message = {"role": "user", "content": "Thanks! And in Rome?"}


@dataclass(frozen=True)
class Finding:
    """One check's result."""

    check: str
    ok: bool
    detail: str


def check_template(chat: ChatFormat, parsers: ParsersConfig) -> list[Finding]:
    """Every check, in order; a check that raises is a failed finding with the error."""
    findings = []
    for name, check in (
        ("render", _render),
        ("tokenize", _tokenize),
        ("tito", _tito),
        ("tool-call parser", _tool_calls),
        ("reasoning parser", _reasoning),
    ):
        try:
            result = check(chat, parsers)
        except Exception as exc:
            result = Finding(name, False, f"{type(exc).__name__}: {exc}")
        if result is not None:
            findings.append(result)
    return findings


def _thinks(parsers: ParsersConfig) -> bool:
    return bool(parsers.reasoning_parser or parsers.think_tags)


def _structured_turn(reasoning: bool) -> Message:
    """An assistant turn as OpenAI-style data: the template decides how it is written."""
    call = {"type": "function", "function": {"name": CALL.name, "arguments": CALL.arguments}}
    turn: Message = {"role": "assistant", "content": "", "tool_calls": [call]}
    if reasoning:
        turn["reasoning_content"] = REASONING
    return turn


def _render(chat: ChatFormat, parsers: ParsersConfig) -> Finding:
    messages = [SYSTEM, USER, _structured_turn(False), TOOL_RESULT, FOLLOW_UP]
    text = chat.render(messages, TOOLS, add_generation_prompt=True)
    missing = [part for part in ("get_weather", USER["content"], FOLLOW_UP["content"]) if part not in text]
    if missing:
        return Finding("render", False, f"the rendered conversation lacks {missing}")
    return Finding(
        "render", True, f"{counted(len(text), 'character')} with tools, a call, its result and two user turns"
    )


def _tokenize(chat: ChatFormat, parsers: ParsersConfig) -> Finding:
    text = chat.render([SYSTEM, USER], TOOLS, add_generation_prompt=True)
    ids = chat.encode(text)
    if chat.decode(ids) != text:
        return Finding("tokenize", False, "decode(encode(render)) differs from the render")
    vocab = chat.tokenizer.get_vocab()
    split = [t for t in (chat.family.stop_tokens if chat.family else ()) if chat.encode(t) != [vocab[t]]]
    if split:
        return Finding("tokenize", False, f"turn-ending tokens {split} do not encode as one token each")
    return Finding("tokenize", True, f"{len(ids)} prompt tokens; turn ends {list(chat.stop_token_ids)}")


def _model_turn(chat: ChatFormat, text: str, calls_tools: bool) -> list[int]:
    """The token ids a model of the family emits for `text` (turn prefix, text, turn-ending token)."""
    sampling = SamplingParams(max_new_tokens=4096)
    return as_model_output(chat, text, calls_tools=calls_tools, sampling=sampling).token_ids


def _tito(chat: ChatFormat, parsers: ParsersConfig) -> Finding:
    think = _think_text(parsers)
    first = _model_turn(chat, think + render_calls(parsers.tool_call_parser, [CALL]), True)
    # A trailing newline, as models often write: a template that strips assistant text breaks TITO.
    second = _model_turn(chat, think + "It is 21 degrees in Paris.\n", False)
    tokens = chat.prompt_ids([SYSTEM, USER], TOOLS)
    tokens += first + chat.turn_end_ids(first[-1], [TOOL_RESULT], add_generation_prompt=True)
    tokens += second + chat.turn_end_ids(second[-1], [FOLLOW_UP], add_generation_prompt=True)
    messages = [
        SYSTEM,
        USER,
        {"role": "assistant", "content": chat.model_text(first)},
        TOOL_RESULT,
        {"role": "assistant", "content": chat.model_text(second)},
        FOLLOW_UP,
    ]
    at = chat.tito_drift(tokens, messages, TOOLS, add_generation_prompt=True)
    if at is not None:
        fresh = chat.render_ids(messages, TOOLS, add_generation_prompt=True)
        window = slice(max(0, at - 8), at + 8)
        ours, theirs = chat.decode(tokens[window]), chat.decode(fresh[window])
        return Finding(
            "tito", False, f"episode tokens differ from a fresh render at token {at}: {ours!r} vs {theirs!r}"
        )
    return Finding("tito", True, f"{counted(len(tokens), 'token')} over two model turns equal a fresh render")


def _think_text(parsers: ParsersConfig) -> str:
    if parsers.think_tags:
        return f"{parsers.think_tags[0]}{REASONING}{parsers.think_tags[1]}\n"
    return f"<think>{REASONING}</think>\n" if parsers.reasoning_parser else ""


def _written_turn(chat: ChatFormat, reasoning: bool) -> str:
    """The text the template writes for an assistant turn that calls a tool (its closing cut off)."""
    before = chat.render([SYSTEM, USER], TOOLS, add_generation_prompt=True)
    full = chat.render([SYSTEM, USER, _structured_turn(reasoning)], TOOLS)
    if not full.startswith(before):
        raise ValueError("the prompt renders differently once an assistant turn follows it")
    written = full[len(before) :]
    stops = [
        written.find(stop) for stop in (chat.family.stop_tokens if chat.family else ()) if stop in written
    ]
    return written[: min(stops)] if stops else written


def _model_turn_text(chat: ChatFormat, parsers: ParsersConfig, reasoning: bool) -> tuple[str, str]:
    """The text of an assistant turn that calls a tool, and who wrote it: with think tags, the model's
    reasoning block before the template's call; otherwise all the template's."""
    if parsers.think_tags:
        return _think_text(parsers) + _written_turn(chat, False), "the model's turn"
    return _written_turn(chat, reasoning), "the template's turn"


def _tool_calls(chat: ChatFormat, parsers: ParsersConfig) -> Finding:
    written, whose = _model_turn_text(chat, parsers, False)
    action = ToolCallActionParser(parsers, TOOLS).parse(written)
    name = f"tool-call parser {parsers.tool_call_parser}"
    if not isinstance(action, ToolCallAction) or list(action.calls) != [CALL]:
        return Finding(name, False, f"reads {action!r} from {whose} {written!r}; expected {CALL}")
    return Finding(name, True, f"reads back {CALL.name}({CALL.arguments}) from {written.strip()!r}")


def _reasoning(chat: ChatFormat, parsers: ParsersConfig) -> Finding | None:
    if not _thinks(parsers):
        return None

    written, whose = _model_turn_text(chat, parsers, True)
    action = ToolCallActionParser(parsers, TOOLS).parse(written)
    name = f"reasoning parser {parsers.reasoning_parser or parsers.think_tags}"
    reasoning = getattr(action, "reasoning", None)
    if reasoning != REASONING:
        return Finding(name, False, f"reads reasoning {reasoning!r} from {whose} {written!r}")
    if not parsers.think_tags:
        return Finding(name, True, "reads back the reasoning the template writes")
    start, end = parsers.think_tags
    unclosed = ToolCallActionParser(parsers, TOOLS).parse(_written_turn(chat, False))
    rule = (
        f"a turn without {end} is a format error"
        if isinstance(unclosed, InvalidAction)
        else f"a turn without {start}…{end} is read as it is"
    )
    return Finding(
        name,
        True,
        f"reads back the {start}…{end} block the model writes in its turn (the prompt's tags; episodes "
        f"keep the model's text, never the template's own reasoning rendering); {rule}",
    )
