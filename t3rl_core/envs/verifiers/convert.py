"""verifiers' messages, tools and responses ↔ t3rl's chat messages and parsed actions."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from typing import Any

from verifiers.types import Message as VfMessage
from verifiers.types import Response, ResponseMessage, Tool, ToolCall

from t3rl_core.types import Action, AnswerAction, InvalidAction, Message, ToolCallAction

MODEL = "t3rl"


def content_of(content: Any) -> Any:
    """A message content in the form t3rl's one reading of contents takes (t3rl_core.chat.message_form,
    where a world's or a row's message enters an episode): None as "", verifiers' content-part models as
    mappings, anything else as it is. That reading joins text parts and refuses the rest naming the
    message and the fix; this converter's own reading failed on any other content with Python's words
    (a tool's dict result: "'str' object has no attribute 'model_dump'")."""
    if content is None:
        return ""
    if isinstance(content, list | tuple):
        return [
            part.model_dump(exclude_none=True) if hasattr(part, "model_dump") else part for part in content
        ]
    return content


def to_chat(message: VfMessage | Mapping[str, Any]) -> Message:
    """One verifiers message as the chat-template message t3rl renders."""
    data = message if isinstance(message, Mapping) else message.model_dump(exclude_none=True)
    role = str(data["role"])
    out: Message = {"role": "user" if role == "text" else role, "content": content_of(data.get("content"))}
    if role == "tool" and data.get("tool_call_id"):
        out["tool_call_id"] = data["tool_call_id"]
    return out


def to_openai_tools(tools: Iterable[Tool | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """verifiers' provider-agnostic tool definitions as OpenAI function tools (what templates render)."""
    out = []
    for tool in tools:
        data = tool if isinstance(tool, Mapping) else tool.model_dump(exclude_none=True)
        function = {"name": data["name"], "description": data.get("description", "")}
        out.append({"type": "function", "function": {**function, "parameters": data.get("parameters", {})}})
    return out


def to_response(action: Action, turn: int) -> Response:
    """A parsed model turn as the response an OpenAI-compatible server returns for it: the calls as
    tool calls (arguments JSON), the rest as content; unparsable output is plain content, as a
    server's tool parser leaves it."""
    calls: list[ToolCall] = []
    match action:
        case ToolCallAction(calls=parsed, text=text, content=content, reasoning=reasoning):
            calls = [
                ToolCall(id=f"call_{turn}_{i}", name=call.name, arguments=json.dumps(call.arguments))
                for i, call in enumerate(parsed)
            ]
            body = content if content is not None else ("" if calls else text)
        case AnswerAction(text=body, reasoning=reasoning):
            pass
        case InvalidAction(text=body):
            reasoning = None
        case _:
            raise TypeError(f"not an action: {action!r}")
    message = ResponseMessage(
        content=body or None,
        reasoning_content=reasoning,
        tool_calls=calls or None,
        finish_reason="tool_calls" if calls else "stop",
        is_truncated=False,
    )
    return Response(id=f"{MODEL}-{turn}", created=int(time.time()), model=MODEL, message=message)
