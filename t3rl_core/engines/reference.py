"""A scripted policy: the environment's gold action, written in the model family's text format.

It drives whole episodes with no model at all (pipeline checks, eval smoke tests, loop benchmarks),
and with seeded injected faults it exercises every error path a real model hits.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import zlib
from array import array
from collections import Counter
from time import monotonic
from typing import TYPE_CHECKING, Any

from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.parsers.render import render_calls
from t3rl_core.types import AnswerAction, ToolCall, ToolCallAction

if TYPE_CHECKING:
    from t3rl_core.chat.format import ChatFormat

PREMATURE_ANSWER = "I have completed your request."
# Emitted texts whose ids are kept: a scripted policy repeats its replies (BFCL: the same gold calls
# and answers across the episodes of a batch), and a real server tokenizes in its own process, so
# encoding each again would charge the rollout loop for work that is not its own. Short texts only
# (a tool call or an answer); ~1M ids at most.
_IDS_CACHE_SIZE = 4096
_IDS_CACHE_MAX_CHARS = 1024


def _wrong_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "_wrong"
    return "wrong"


class ReferenceEngine(Engine):
    """Emits `context.env.oracle()` as text + the family's turn-ending token, with log-probs 0.0."""

    answers_plain = True  # the tokenizer's ids (ints), log-probs 0.0, no meta

    def __init__(self, config: ReferenceEngineConfig, chat: ChatFormat | None = None) -> None:
        if chat is None:
            raise ValueError(
                "the reference engine needs the run's chat format (ReferenceEngine(config, chat=...))"
            )
        self.config, self.chat = config, chat
        # How often each fault was injected (read by tests and reports).
        self.injected: Counter[str] = Counter()
        # Ids of emitted texts (the chat format is fixed per engine, so the text alone is the key).
        self._ids: dict[str, tuple[int, ...]] = {}

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        """The scripted reply, `latency_s` after the call (or once it is written, when that takes
        longer): the latency is the whole call's, as a served model's is, whose tokenizing and sampling
        happen within it, not after it."""
        if not self.config.latency_s:
            return await self._reply(input_ids, sampling, context)
        deadline = monotonic() + self.config.latency_s
        generation = await self._reply(input_ids, sampling, context)
        left = deadline - monotonic()
        if left > 0:
            await asyncio.sleep(left)
        return generation

    async def _reply(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None
    ) -> Generation:
        env = context.env if context else None
        action = env.oracle() if env is not None else None
        if action is None:
            error = "no gold action here" if env is not None else "no environment in the generation context"
            return Generation([], [], "abort", error=f"reference engine: {error}")
        rng = random.Random(self._state_seed(input_ids, sampling.seed)) if self.config.faults else None
        text, calls_tools = self._text(action, context, rng)
        emitted, stop_token = _emitted(self.chat, text, calls_tools=calls_tools, sampling=sampling)
        return _generation(await self._encode(emitted), stop_token, sampling)

    async def _encode(self, text: str) -> list[int]:
        """The ids of `text` as `chat.encode` gives them, from the kept ids of a repeated text; a new
        text is tokenized off the event loop when long, as a remote server tokenizes away from the
        rollout process."""
        ids = self._ids.get(text)
        if ids is None:
            ids = tuple(await self.chat.encode_async(text))
            if len(text) <= _IDS_CACHE_MAX_CHARS:
                if len(self._ids) >= _IDS_CACHE_SIZE:
                    del self._ids[next(iter(self._ids))]  # the oldest
                self._ids[text] = ids
        return list(ids)

    def _state_seed(self, input_ids: list[int], sample_seed: int | None) -> int:
        """Seed of this call's faults: the config seed, the state and the sample's own seed (the eval's
        per task, sample and repeat), so a rerun injects the same faults and another sample of the task
        other ones: with the state alone every sample and repeat drew alike (pass@k was pass@1, a
        repeat's variance 0)."""
        seed = zlib.crc32(array("q", input_ids).tobytes(), self.config.seed)
        return seed if sample_seed is None else zlib.crc32(str(sample_seed).encode(), seed)

    def _text(
        self, action: Any, context: GenerationContext | None, rng: random.Random | None
    ) -> tuple[str, bool]:
        """The text of the (possibly faulty) action, and whether it calls tools."""
        if isinstance(action, AnswerAction):
            return action.text, False
        if not isinstance(action, ToolCallAction):
            raise TypeError(
                f"env.oracle() returned {type(action).__name__}; expected a tool-call or answer action"
            )
        parser_name = (context.tool_call_parser if context else None) or self._family_parser()
        calls = list(action.calls)
        fault = self._fault(rng) if rng is not None else None
        if fault == "premature_answer":
            return PREMATURE_ANSWER, False
        if fault == "wrong_argument" and calls and calls[0].arguments and rng is not None:
            key = rng.choice(sorted(calls[0].arguments))
            arguments = {**calls[0].arguments, key: _wrong_value(calls[0].arguments[key])}
            calls[0] = dataclasses.replace(calls[0], arguments=arguments)
        if fault == "extra_call" and calls:
            calls.append(ToolCall(calls[0].name, dict(calls[0].arguments)))
        text = render_calls(parser_name, calls)
        if fault == "malformed_json":
            brace = text.rfind("}")
            text = text[:brace] + text[brace + 1 :] if brace >= 0 else text[: len(text) // 2]
        return text, True

    def _fault(self, rng: random.Random) -> str | None:
        for name, probability in sorted(self.config.faults.items()):
            if rng.random() < probability:
                self.injected[name] += 1
                return name
        return None

    def _family_parser(self) -> str:
        if self.chat.family is None:
            raise ValueError(
                "the reference engine needs parsers.tool_call_parser for a tokenizer of unknown family"
            )
        return self.chat.family.tool_call_parser


def as_model_output(
    chat: ChatFormat, text: str, *, calls_tools: bool, sampling: SamplingParams
) -> Generation:
    """`text` as a model of the chat family emits it: the family's turn prefix, the text's tokens and
    the turn-ending token, stopping like SGLang would (at a stop string or at the length cap)."""
    emitted, stop_token = _emitted(chat, text, calls_tools=calls_tools, sampling=sampling)
    return _generation(chat.encode(emitted), stop_token, sampling)


def _emitted(
    chat: ChatFormat, text: str, *, calls_tools: bool, sampling: SamplingParams
) -> tuple[str, int | None]:
    """The text the model writes (with its turn prefix, cut after a stop string) and the turn-ending
    token that follows it (None when a stop string ended the call)."""
    family = chat.family
    stop_token = chat.stop_token_ids[0]
    if family is not None:
        calls_prefix = family.call_turn_prefix if calls_tools else None
        text = (family.turn_prefix if calls_prefix is None else calls_prefix) + text
        if calls_tools and family.tool_turn_stop:
            stop_token = chat.tokenizer.convert_tokens_to_ids(family.tool_turn_stop)
    ends = [text.find(stop) + len(stop) for stop in sampling.stop if stop and stop in text]
    return (text[: min(ends)], None) if ends else (text, stop_token)


def _generation(ids: list[int], stop_token: int | None, sampling: SamplingParams) -> Generation:
    ids = ids if stop_token is None else [*ids, stop_token]
    if len(ids) > sampling.max_new_tokens:
        ids = ids[: sampling.max_new_tokens]
        return Generation(ids, [0.0] * len(ids), "length")
    return Generation(ids, [0.0] * len(ids), "stop")
