"""Token ids of a prompt's head (system messages + tool list), encoded once per distinct head.

A tool-use prompt is mostly its tools block (BFCL: 14.6k of a 15.8k-character prompt, 81 distinct
tool lists in 300 test rows), so encoding it once per tool list halves the episode loop's CPU. The
head's text is cut right after a control token (an added token): the tokenizer splits its input at
added tokens before normalising and pre-tokenising, so the ids of `head + rest` are exactly the ids of
`head` followed by the ids of `rest`. That argument is checked, not trusted: the first prompt of each
head is encoded whole, its head's ids are what precedes the ids of its rest, and the head is dropped
for good if the whole does not end with the rest's ids (a tokenizer that normalises across segments
or prefixes each one). tests/chat/test_prompt_head.py checks the cached
ids against whole-text encodes for every shipped family on real BFCL prompts.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from t3rl_core.chat.keys import json_key

if TYPE_CHECKING:
    from t3rl_core.types import Message

# Stands in for the first non-system message's content when the head is rendered on its own.
_PROBE = "\u27e6t3rl-prompt-head\u27e7"
# Distinct heads kept (a run has one per tool list and system prompt).
_HEAD_CACHE_SIZE = 512
# A prompt's ids as (its head's kept ids, shared by every prompt of the head; the rest's ids).
PromptParts = tuple[tuple[int, ...], list[int]]


class RendersAndEncodes(Protocol):
    """What the head cache needs of a chat format (`t3rl_core.chat.format.ChatFormat`, which owns it)."""

    def render(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    async def encode_async(self, text: str) -> list[int]: ...


@dataclass
class _Head:
    text: str
    ids: tuple[int, ...] | None = None  # known once a whole prompt with this head was encoded
    # Set while an async caller encodes this head's first whole prompt: others wait for its ids.
    pending: asyncio.Future[None] | None = None


@dataclass
class _Job:
    """What one prompt needs encoded: its rest after a known head, or (first sight) the rest and the
    whole text, which proves the cut and gives the head's ids; or the whole text alone (no head)."""

    text: str
    key: tuple[str, str]
    head: _Head | None
    rest: str | None

    @property
    def texts(self) -> list[str]:
        if self.head is None or self.rest is None:
            return [self.text]
        return [self.rest] if self.head.ids is not None else [self.rest, self.text]


class PromptHeads:
    """Per (system messages, tools): the head text and its ids; None when the template gives no head."""

    def __init__(self, chat: RendersAndEncodes, isolated_tokens: Iterable[str]) -> None:
        self.chat = chat
        self.isolated_tokens = tuple(token for token in isolated_tokens if token)
        self._heads: OrderedDict[tuple[str, str], _Head | None] = OrderedDict()

    def encode_prompt(
        self,
        text: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        tools_key: str,
    ) -> list[int]:
        """The ids of `text`, the render of `messages` with `tools` (`tools_key` names them), reusing
        its head's ids."""
        head, rest = self.encode_parts(text, messages, tools, tools_key)
        return [*head, *rest]

    def encode_parts(
        self,
        text: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        tools_key: str,
    ) -> PromptParts:
        """`encode_prompt`'s ids as (its head's kept ids, the rest's): their concatenation."""
        job = self._job(text, messages, tools, tools_key)
        return self._finish(job, [self.chat.encode(part) for part in job.texts])

    async def encode_parts_async(
        self,
        text: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        tools_key: str,
    ) -> PromptParts:
        """`encode_parts` with the encodes off the event loop (`chat.encode_async`); concurrent first
        prompts of one new head encode its whole text once, the others wait for its ids."""
        job = self._job(text, messages, tools, tools_key)
        while job.head is not None and job.head.ids is None and job.head.pending is not None:
            await asyncio.shield(job.head.pending)
            job = self._job(text, messages, tools, tools_key)
        first = job.head is not None and job.head.ids is None and job.rest is not None
        if first and job.head is not None:
            job.head.pending = asyncio.get_running_loop().create_future()
        try:
            # One text (a known head's rest) is awaited in place: gathering wraps it in a task, which
            # suspends the episode until the loop's next iteration, after every other episode woken
            # with it, though the rest's encode runs on the loop at once anyway.
            texts = job.texts
            if len(texts) == 1:
                return self._finish(job, [await self.chat.encode_async(texts[0])])
            return self._finish(job, await asyncio.gather(*(self.chat.encode_async(part) for part in texts)))
        finally:
            if first and job.head is not None and job.head.pending is not None:
                job.head.pending.set_result(None)
                job.head.pending = None

    def _job(
        self,
        text: str,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
        tools_key: str,
    ) -> _Job:
        leading = next((i for i, m in enumerate(messages) if m.get("role") != "system"), len(messages))
        system = [dict(message) for message in messages[:leading]]
        key = (tools_key, json_key(system, sort_keys=True))
        if key in self._heads:
            self._heads.move_to_end(key)
            head = self._heads[key]
        else:
            head = self._heads[key] = self._head(system, tools)
            if len(self._heads) > _HEAD_CACHE_SIZE:
                self._heads.popitem(last=False)
        if head is None or not text.startswith(head.text):
            return _Job(text, key, None, None)
        return _Job(text, key, head, text[len(head.text) :])

    def _finish(self, job: _Job, encoded: list[list[int]]) -> PromptParts:
        if job.head is None or job.rest is None:
            return (), encoded[0]
        rest = encoded[0]
        if len(encoded) == 1:
            assert job.head.ids is not None
            return job.head.ids, rest
        whole = encoded[1]  # the head's first prompt: its whole encode gives the head's ids and the proof
        if len(rest) > len(whole) or whole[len(whole) - len(rest) :] != rest:
            if self._heads.get(job.key) is job.head:
                self._heads[job.key] = None
            return (), whole
        job.head.ids = tuple(whole[: len(whole) - len(rest)])
        return job.head.ids, rest

    def _head(self, system: list[dict[str, Any]], tools: Sequence[Mapping[str, Any]] | None) -> _Head | None:
        probe = self.chat.render([*system, {"role": "user", "content": _PROBE}], tools)
        before = probe[: max(probe.find(_PROBE), 0)]
        ends = (before.rfind(token) + len(token) for token in self.isolated_tokens if token in before)
        cut = max(ends, default=0)
        if cut == 0:
            return None
        return _Head(before[:cut])
