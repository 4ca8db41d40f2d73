"""One form of each message the chat formats render: content as text, a call's arguments as an object.

Content parts (OpenAI's `[{"type": "text", "text": …}, …]`) failed in every shipped template
(`can only concatenate str (not "list") to str`): a row holding them was refused as no chat message and
a world's was told to write its content with json.dumps, which would show the model the parts' JSON.
Parts that are all text are their text, concatenated (as OpenAI reads them); a part of another type
(an image) is refused, naming it: the chat formats render text only.

A structured call's arguments have one form too: a JSON object (a mapping).

A row's few-shot call (or a world's assistant message) keeps its calls as data, `tool_calls[i].function`
with a name and arguments, and each chat template renders them its own way. OpenAI's messages hold the
arguments as JSON text; GLM-4.5's template wrote no argument of such a call (`<tool_call>add\\n</tool_call>`),
the others wrote the text. `null` was written as `"arguments": null`, a call every t3rl call reader
refuses from the model (the prompt taught it), and a call without arguments failed inside the template
(`Undefined is not JSON serializable`, the episode t3rl's own bug). So arguments written as JSON text
of an object are read into that object where a message enters the episode, for every family alike,
and any other arguments are refused, naming the message and the call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from t3rl_core import outside_json


def normal_message(message: Mapping[str, Any], where: str) -> tuple[Mapping[str, Any], str | None]:
    """`message` in the one form (`text_content`, `object_arguments`), or the message as it is and
    what keeps it from it (`where` names the message)."""
    message, problem = text_content(message, where)
    return (message, problem) if problem is not None else object_arguments(message, where)


def text_content(message: Mapping[str, Any], where: str) -> tuple[Mapping[str, Any], str | None]:
    """`message` with content parts of text as their text; the problem with any other part."""
    parts = message.get("content")
    # Content parts are a list of typed mappings; any other list is data a world meant as its result
    # (left to the message's own check, which says to write it as text).
    if not isinstance(parts, list | tuple) or not all(isinstance(p, Mapping) and "type" in p for p in parts):
        return message, None
    texts = []
    for index, part in enumerate(parts):
        kind = part["type"]
        if kind != "text" or not isinstance(part.get("text"), str):
            return message, (
                f"{where}'s content part {index} is of type {str(kind)[:40]!r}, not text: the chat formats "
                "render text only (write each part as {'type': 'text', 'text': ...}, or the content as text)"
            )
        texts.append(part["text"])
    return {**message, "content": "".join(texts)}, None


def object_arguments(message: Mapping[str, Any], where: str) -> tuple[Mapping[str, Any], str | None]:
    """`message` with each structured call's arguments a mapping (JSON text of an object read), or the
    message as it is and what keeps one from being so (`where` names the message)."""
    calls = message.get("tool_calls")
    if not calls:
        return message, None
    if not isinstance(calls, list | tuple):
        return message, f"{where}'s tool_calls is a {type(calls).__name__}, not a list of calls"
    read: list[Any] = []
    for index, call in enumerate(calls):
        function = call.get("function", call) if isinstance(call, Mapping) else None
        at = f"{where}'s tool_calls[{index}]"
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            return message, f"{at} is no call with a function name: {str(call)[:200]}"
        arguments = written = function.get("arguments", ...)
        if isinstance(written, str):
            with contextlib.suppress(ValueError):  # no JSON: refused below, as written
                arguments = outside_json.loads(written, "a call's arguments")
        if not isinstance(arguments, Mapping):
            written = "none" if written is ... else repr(written)[:120]
            return message, (
                f"{at}.function.arguments is {written}, not a JSON object (or JSON text of one): each "
                "chat template writes the arguments of a call as an object (write {} for a call "
                "without arguments)"
            )
        if arguments is function.get("arguments"):
            read.append(call)
        elif function is call:
            read.append({**call, "arguments": dict(arguments)})
        else:
            read.append({**call, "function": {**function, "arguments": dict(arguments)}})
    if all(a is b for a, b in zip(read, calls, strict=True)):
        return message, None
    return {**message, "tool_calls": read}, None
