"""Text a tokenizer can encode: Unicode scalar values only, never a lone surrogate.

A Python string may hold a lone surrogate (U+D800..U+DFFF); no tokenizer encodes one (the Rust
tokenizers refuse the string) and no UTF-8 file can hold one. A model reaches one without ever sampling
it: its text is decoded from ids (so it holds none), but a JSON escape in a tool call's arguments
(`{"text": "\\ud800"}`) decodes to one, and a tool that echoes its argument, a file it names or an
error that quotes it hands it back. An episode then failed as t3rl's own bug (and with the drift check
raised out of the loop). Every message and inline text that enters an episode is made scalar text
first: each lone surrogate becomes U+FFFD, what a decode of invalid bytes gives. So is each tool a
row offers (`scalar_value`, once per tool as the chat format renders it): a description or an enum
value holding one failed every episode of the row as t3rl's own bug, in the tokenizer's words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from t3rl_core.types import Message

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def _holds_surrogate(text: str) -> bool:
    # str.isascii reads a flag the string keeps (no scan): an ASCII text holds no surrogate, and a
    # world's observations mostly are ASCII, some ~30k characters long.
    return not text.isascii() and _SURROGATE.search(text) is not None


def scalar_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (the same object when it holds none)."""
    return _SURROGATE.sub(REPLACEMENT, text) if _holds_surrogate(text) else text


def scalar_message(message: Message) -> Message:
    """`message` with every string in it scalar text, nested ones too (the same object when none holds
    a surrogate): a row's few-shot call kept as data (its tool_calls' arguments, its reasoning_content)
    holding one failed every episode of the row as t3rl's own bug, as its content did before."""
    if not all(type(value) is str for value in message.values()):
        return scalar_value(message)
    if not any(_holds_surrogate(value) for value in message.values()):
        return message
    return {key: scalar_text(value) for key, value in message.items()}


def scalar_value(value: Any) -> Any:
    """`value` (a tool: dicts, lists, strings) with every key and string scalar text; `value` itself when
    none holds a surrogate."""
    if isinstance(value, str):
        return scalar_text(value)
    if isinstance(value, Mapping):
        items = [(scalar_value(key), scalar_value(item)) for key, item in value.items()]
        if all(a is key and b is item for (a, b), (key, item) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        items = [scalar_value(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
