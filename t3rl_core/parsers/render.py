"""Tool calls → the text a model of a given SGLang tool-call parser format writes.

The inverse of SGLang's detectors: rendering then parsing with the same parser name gives the calls
back (tested for every format here). Used by the scripted reference engine and in error hints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from t3rl_core import outside_json
from t3rl_core.types import ToolCall


def _json(value: Any) -> str:
    # Same spelling as the chat templates' `tojson` (HF's: ensure_ascii=False, default separators).
    return json.dumps(value, ensure_ascii=False)


def _text_value(value: Any) -> str:
    """XML-style formats write strings raw and everything else as JSON."""
    return value if isinstance(value, str) else _json(value)


def _glm_value(value: Any) -> str:
    """GLM writes strings raw, but SGLang's GLM parsers read a value as JSON first, then as a JSON string
    with its escapes, then (for a string argument) strip one pair of wrapping quotes: a string any of
    those readings would change ("12", "true", '"x"', "'x'", '\\"x\\"') is written JSON-quoted, which
    the first reading gives back exactly."""
    if isinstance(value, str) and not _glm_reads_otherwise(value):
        return value
    return _json(value)


def _glm_reads_otherwise(text: str) -> bool:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return True
    try:
        outside_json.loads(text, "an argument")
        return True
    except outside_json.OutsideJsonError:
        # Nested past what t3rl reads (json.loads raised RecursionError out of the render): written
        # JSON-quoted, which every reading gives back exactly.
        return True
    except ValueError:
        pass
    try:
        escaped = outside_json.loads('{"tmp": "' + text + '"}', "an argument")["tmp"]
        outside_json.loads(escaped, "an argument")
        return True
    except outside_json.OutsideJsonError:
        return True
    except ValueError:
        return False


def _json_tagged(calls: Sequence[ToolCall]) -> str:
    return "\n".join(
        f'<tool_call>\n{{"name": {_json(call.name)}, "arguments": {_json(call.arguments)}}}\n</tool_call>'
        for call in calls
    )


def _llama3(calls: Sequence[ToolCall]) -> str:
    return "; ".join(
        f'{{"name": {_json(call.name)}, "parameters": {_json(call.arguments)}}}' for call in calls
    )


def _deepseek_v3(calls: Sequence[ToolCall]) -> str:
    body = "\n".join(
        f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{call.name}\n```json\n{_json(call.arguments)}\n```<｜tool▁call▁end｜>"
        for call in calls
    )
    return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


def _deepseek_v31(calls: Sequence[ToolCall]) -> str:
    body = "".join(
        f"<｜tool▁call▁begin｜>{call.name}<｜tool▁sep｜>{_json(call.arguments)}<｜tool▁call▁end｜>"
        for call in calls
    )
    return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


def _glm(calls: Sequence[ToolCall], newline: str) -> str:
    """GLM-4.5 writes a newline before each argument tag and the closing tag; GLM-4.7 writes none."""
    return newline.join(
        f"<tool_call>{call.name}"
        + "".join(
            f"{newline}<arg_key>{key}</arg_key>{newline}<arg_value>{_glm_value(value)}</arg_value>"
            for key, value in call.arguments.items()
        )
        + f"{newline}</tool_call>"
        for call in calls
    )


def _glm45(calls: Sequence[ToolCall]) -> str:
    return _glm(calls, "\n")


def _glm47(calls: Sequence[ToolCall]) -> str:
    return _glm(calls, "")


def _qwen3_coder(calls: Sequence[ToolCall]) -> str:
    return "\n".join(
        f"<tool_call>\n<function={call.name}>\n"
        + "".join(
            f"<parameter={key}>\n{_text_value(value)}\n</parameter>\n"
            for key, value in call.arguments.items()
        )
        + "</function>\n</tool_call>"
        for call in calls
    )


def _glm4_0414(calls: Sequence[ToolCall]) -> str:
    """GLM-4-0414: each call its own assistant segment, the name then the JSON arguments (no tags)."""
    return "<|assistant|>".join(f"{call.name}\n{_json(call.arguments)}" for call in calls)


def _mistral(calls: Sequence[ToolCall]) -> str:
    return "[TOOL_CALLS] " + _json([{"name": call.name, "arguments": call.arguments} for call in calls])


@dataclass(frozen=True)
class CallFormat:
    """How one SGLang parser format writes calls."""

    render: Callable[[Sequence[ToolCall]], str]
    # Markers that open and close each call; None when calls are not individually tagged.
    call_open: str | None = None
    call_close: str | None = None
    # Markers around the whole group of calls, when the format has them.
    block_open: str | None = None
    block_close: str | None = None
    # Whether arguments are written as JSON, where a tag's `<` can be written as the escape `\u003c`
    # (GLM's and Qwen3-Coder's values are raw text: a tag in one cannot be written at all).
    json_arguments: bool = True


_DEEPSEEK_MARKERS = {
    "call_open": "<｜tool▁call▁begin｜>",
    "call_close": "<｜tool▁call▁end｜>",
    "block_open": "<｜tool▁calls▁begin｜>",
    "block_close": "<｜tool▁calls▁end｜>",
}
_TAGGED = {"call_open": "<tool_call>", "call_close": "</tool_call>"}

FORMATS: dict[str, CallFormat] = {
    "qwen25": CallFormat(_json_tagged, **_TAGGED),
    "qwen": CallFormat(_json_tagged, **_TAGGED),
    "hermes": CallFormat(_json_tagged, **_TAGGED),
    "llama3": CallFormat(_llama3),
    "deepseekv3": CallFormat(_deepseek_v3, **_DEEPSEEK_MARKERS),
    "deepseekv31": CallFormat(_deepseek_v31, **_DEEPSEEK_MARKERS),
    "glm": CallFormat(_glm45, **_TAGGED, json_arguments=False),
    "glm45": CallFormat(_glm45, **_TAGGED, json_arguments=False),
    "glm47": CallFormat(_glm47, **_TAGGED, json_arguments=False),
    "glm4_0414": CallFormat(_glm4_0414),
    "qwen3_coder": CallFormat(_qwen3_coder, **_TAGGED, json_arguments=False),
    "mistral": CallFormat(_mistral),
}


def call_format(parser_name: str) -> CallFormat:
    try:
        return FORMATS[parser_name]
    except KeyError:
        raise ValueError(
            f"no renderer for tool-call parser '{parser_name}'; supported: {', '.join(sorted(FORMATS))}"
        ) from None


def render_calls(parser_name: str, calls: Sequence[ToolCall]) -> str:
    """The text a model in `parser_name`'s format writes to make `calls`."""
    return call_format(parser_name).render(calls)
