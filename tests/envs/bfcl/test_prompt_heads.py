"""Prompt ids built from a cached system + tools head equal a whole-text encode, for every family.

BFCL prompts are the case the head cache exists for (the tools block is most of the prompt and rows
share tool lists); a head whose split would change the ids must be dropped, never used.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from t3rl_core.chat.format import ChatFormat, tools_cache_key
from t3rl_core.chat.offloop import OffLoopEncoder
from t3rl_core.chat.prompt_head import PromptHeads
from tests.rollout.fakes import chat, qwen_chat  # noqa: F401

SYSTEM = {"role": "system", "content": "You are a careful assistant."}


def _shared_tool_rows(rows: list[dict[str, Any]], per_list: int, lists: int) -> list[dict[str, Any]]:
    """`per_list` rows for each of the `lists` most common tool lists of the test split."""
    test = [row for row in rows if row["metadata"]["split"] == "test"]
    common = Counter(tools_cache_key(row["metadata"]["tools"]) for row in test).most_common(lists)
    keys = {key for key, count in common if count >= per_list}
    picked: dict[str, list[dict[str, Any]]] = {key: [] for key in keys}
    for row in test:
        key = tools_cache_key(row["metadata"]["tools"])
        if key in picked and len(picked[key]) < per_list:
            picked[key].append(row)
    return [row for group in picked.values() for row in group]


def test_cached_head_ids_equal_whole_encodes(chat: ChatFormat, bfcl_rows: list[dict[str, Any]]) -> None:  # noqa: F811
    rows = _shared_tool_rows(bfcl_rows, per_list=2, lists=2)
    assert len(rows) == 4
    for row in rows:
        tools = row["metadata"]["tools"]
        for prompt in (row["prompt"], [SYSTEM, *row["prompt"]]):
            assert chat.prompt_ids(prompt, tools) == chat.render_ids(
                prompt, tools, add_generation_prompt=True
            )
    heads = [head for head in chat._heads._heads.values() if head is not None and head.ids is not None]
    if chat.family.name != "llama3":  # llama3 puts the tools in the first user turn: no head before them
        assert heads and max(len(head.text) for head in heads) > 10_000


class _SegmentMarkingChat:
    """A chat whose encode marks the start of every text it gets, as a tokenizer that prefixes each
    segment would: a head + rest split then changes the ids, so the head must be dropped."""

    def __init__(self, inner: ChatFormat) -> None:
        self.inner = inner

    def render(self, *args: Any, **kwargs: Any) -> str:
        return self.inner.render(*args, **kwargs)

    def encode(self, text: str) -> list[int]:
        return [-1, *self.inner.encode(text)]


def test_a_head_that_changes_the_ids_is_dropped(
    qwen_chat: ChatFormat,  # noqa: F811
    bfcl_rows: list[dict[str, Any]],
) -> None:
    marking = _SegmentMarkingChat(qwen_chat)
    heads = PromptHeads(marking, ["<|im_start|>", "<|im_end|>"])  # type: ignore[arg-type]
    for row in _shared_tool_rows(bfcl_rows, per_list=2, lists=1):
        tools = row["metadata"]["tools"]
        text = qwen_chat.render(row["prompt"], tools, add_generation_prompt=True)
        assert heads.encode_prompt(text, row["prompt"], tools, tools_cache_key(tools)) == marking.encode(text)
    assert list(heads._heads.values()) == [None]


def test_concurrent_first_prompts_of_a_new_head_encode_it_whole_once(
    qwen_chat: ChatFormat,  # noqa: F811
    bfcl_rows: list[dict[str, Any]],
) -> None:
    chat_ = ChatFormat(qwen_chat.tokenizer, template=qwen_chat.template, family_=qwen_chat.family)
    row = next(row for row in bfcl_rows if row["metadata"]["split"] == "test")
    tools = row["metadata"]["tools"]
    prompts = [[*row["prompt"][:-1], {"role": "user", "content": f"question {i}"}] for i in range(6)]
    encoded: list[str] = []
    inner = chat_.encode

    def counting(text: str) -> list[int]:
        encoded.append(text)
        return inner(text)

    chat_._off_loop = OffLoopEncoder(counting)

    async def run() -> list[list[int]]:
        return await asyncio.gather(*(chat_.prompt_ids_async(prompt, tools) for prompt in prompts))

    assert asyncio.run(run()) == [chat_.render_ids(p, tools, add_generation_prompt=True) for p in prompts]
    head = next(head for head in chat_._heads._heads.values() if head is not None)
    assert sum(text.startswith(head.text) for text in encoded) == 1  # the one whole-prompt encode
    assert len(encoded) == len(prompts) + 1


def test_a_known_heads_prompt_is_encoded_without_suspending_its_episode(
    qwen_chat: ChatFormat,  # noqa: F811
    bfcl_rows: list[dict[str, Any]],
) -> None:
    """Once its head is known, a prompt's rest is encoded in place: the coroutine finishes on its first
    step. A suspension there would hold every episode of a batch start until all their resets ran."""
    row = _shared_tool_rows(bfcl_rows, per_list=2, lists=1)[0]
    tools = row["metadata"]["tools"]
    asyncio.run(qwen_chat.prompt_ids_async(row["prompt"], tools))  # the head's first prompt
    system = [message for message in row["prompt"] if message["role"] == "system"]
    prompt = [*system, {"role": "user", "content": "Another question on the same tools."}]
    step = qwen_chat.prompt_ids_async(prompt, tools)
    try:
        step.send(None)
    except StopIteration as finished:
        assert finished.value == qwen_chat.render_ids(prompt, tools, add_generation_prompt=True)
    else:
        step.close()
        raise AssertionError("the prompt's encode suspended the episode")
