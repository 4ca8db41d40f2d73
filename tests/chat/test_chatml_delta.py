"""Turn deltas written without Jinja for t3rl's ChatML templates equal the template's own render."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.chatml_delta import delta_writer
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import _DELTA_BASE, _SENTINEL, ChatFormat
from t3rl_core.chat.shipped import load_template
from t3rl_core.chat.tiny import shared_tokenizer_dir

# Template arguments the writer must follow (thinking off opens qwen3's generation prompt with an
# empty think block; any falsy value counts, as in Jinja).
THINKING = [{}, {"enable_thinking": False}, {"enable_thinking": True}, {"enable_thinking": 0}]
CONTENT = st.lists(
    st.sampled_from(["a", " ", "\n", "{{", "}}", "{%", "<|im_end|>", "<tool_response>", "é", "⟦", ",", "'"]),
    max_size=30,
).map("".join)
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["tool", "tool", "user", "system", "observation"]), "content": CONTENT},
    optional={"name": st.sampled_from(["ls", "cd"])},
)


KEYS = [(name, index) for name in ("qwen3", "qwen2_5") for index in range(len(THINKING))]


@cache  # on first use: loaded at import, the formats cost every xdist worker their tokenizers to collect this
def chat_format(name: str, index: int) -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir(name), name, **THINKING[index])


@pytest.mark.parametrize("key", sorted(KEYS))
@settings(max_examples=80, deadline=None)
@given(messages=st.lists(MESSAGE, max_size=6), add_generation_prompt=st.booleans())
def test_written_deltas_are_the_template_render(
    key: tuple[str, int], messages: list[dict[str, Any]], add_generation_prompt: bool
) -> None:
    chat = chat_format(*key)
    assert chat._write_delta is not None
    conversation = [*_DELTA_BASE, *messages]
    assert chat._write_delta(messages, add_generation_prompt) is not None
    written = chat._render_delta(conversation, add_generation_prompt)
    assert written == chat.render(conversation, add_generation_prompt=add_generation_prompt)


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "assistant", "content": "an assistant message"}],
        [{"role": "tool", "content": None}],
        [{"role": "tool", "content": ["a", "list"]}],
        [{"role": "user"}],
        [{"content": "no role"}],
    ],
)
def test_other_messages_are_left_to_the_template(messages: list[dict[str, Any]]) -> None:
    chat = chat_format("qwen3", 0)
    assert chat._write_delta is not None and chat._write_delta(messages, True) is None


def test_only_the_shipped_chatml_templates_are_written() -> None:
    written = {name for name in FAMILIES if delta_writer(load_template(name), {}) is not None}
    assert written == {"qwen3", "qwen2_5"}
    assert delta_writer(load_template("qwen3") + "{# changed #}", {}) is None


def test_a_repeated_tool_observation_delta_is_the_fresh_render_of_its_ids() -> None:
    chat = chat_format("qwen3", 1)
    messages = [{"role": "tool", "name": "ls", "content": "a, b"}, {"role": "user", "content": "Next?"}]
    conversation = [*_DELTA_BASE, *messages]
    rendered = chat.render(conversation, add_generation_prompt=True)
    expected = chat.encode(rendered[rendered.index(_SENTINEL) + len(_SENTINEL) :])
    assert chat.turn_end_ids(None, messages, add_generation_prompt=True) == expected
