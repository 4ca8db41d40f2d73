"""Turn deltas of t3rl's own ChatML templates (qwen3, qwen2_5), written without Jinja.

A turn delta is rendered against a small fixed conversation (t3rl_core/chat/format.py); for these two
templates its text is a fixed function of the new messages' roles and contents, which this module
writes directly (a fifth of the CPU of a BFCL model call went to the Jinja render of deltas). It
applies only to a template whose source is exactly a shipped one and to messages that are dicts of
strings with a role other than assistant (an env's observations); anything else is rendered by the
template. tests/chat/test_chatml_delta.py checks the written deltas against the template's render.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from t3rl_core.chat.shipped import load_template

# What follows the base conversation's assistant text: its turn's end.
_CLOSING = "<|im_end|>\n"
_GENERATION_PROMPT = "<|im_start|>assistant\n"
_EMPTY_THINK = "<think>\n\n</think>\n\n"
# The shipped templates written here: whether `enable_thinking=false` opens the generation prompt
# with an empty think block.
_THINKING = {"qwen3": True, "qwen2_5": False}

Writer = Callable[[Sequence[Mapping[str, Any]], bool], "str | None"]


def delta_writer(template: str, variables: Mapping[str, Any]) -> Writer | None:
    """The delta writer of `template` rendered with `variables`, if it is a shipped ChatML template."""
    name = next((name for name in _THINKING if load_template(name) == template), None)
    if name is None:
        return None
    thinking_off = _THINKING[name] and "enable_thinking" in variables and not variables["enable_thinking"]
    prompt = _GENERATION_PROMPT + (_EMPTY_THINK if thinking_off else "")

    def write(messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool) -> str | None:
        """The text after the base conversation's assistant text; None: render with the template."""
        roles = []
        for message in messages:
            if type(message) is not dict or not all(type(value) is str for value in message.values()):
                return None
            role = message.get("role")
            if role is None or role == "assistant" or "content" not in message:
                return None
            roles.append(role)
        parts = [_CLOSING]
        for index, (message, role) in enumerate(zip(messages, roles, strict=True)):
            if role != "tool":
                parts.append(f"<|im_start|>{role}\n{message['content']}<|im_end|>\n")
                continue
            if index == 0 or roles[index - 1] != "tool":
                parts.append("<|im_start|>user")
            parts.append(f"\n<tool_response>\n{message['content']}\n</tool_response>")
            if index + 1 == len(roles) or roles[index + 1] != "tool":
                parts.append("<|im_end|>\n")
        if add_generation_prompt:
            parts.append(prompt)
        return "".join(parts)

    return write
