"""Encodes off the event loop: the ids of a plain encode, one worker batch per loop iteration."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from t3rl_core.chat.batch_encode import INLINE_CHARS, BatchEncoder
from t3rl_core.chat.format import ChatFormat
from tests.rollout.fakes import chat, qwen_chat  # noqa: F401

TEXTS = ["hello world", "<|im_start|>user\nList my files.<|im_end|>\n", "ünïcödé 中文 🎉", "x" * 5000]


def test_async_encodes_equal_plain_encodes(chat: ChatFormat) -> None:  # noqa: F811
    async def run() -> list[list[int]]:
        return await asyncio.gather(*(chat.encode_async(text) for text in TEXTS))

    assert asyncio.run(run()) == [chat.encode(text) for text in TEXTS]


def _recording_encoder() -> tuple[BatchEncoder, list[tuple[list[str], str]]]:
    calls: list[tuple[list[str], str]] = []

    def encode_batch(texts: list[str]) -> list[list[int]]:
        calls.append((texts, threading.current_thread().name))
        return [[len(text)] for text in texts]

    return BatchEncoder(encode_batch), calls


def test_short_texts_go_to_a_worker_as_one_batch_and_a_long_one_alone() -> None:
    encoder, calls = _recording_encoder()
    texts = ["s" * 3000, "L" * INLINE_CHARS, "t" * 3000]

    async def run() -> list[list[int]]:
        return await asyncio.gather(*(encoder.encode(text) for text in texts))

    assert asyncio.run(run()) == [[len(text)] for text in texts]
    assert sorted(batch for batch, _ in calls) == [[texts[1]], [texts[0], texts[2]]]
    assert threading.current_thread().name not in {thread for _, thread in calls}


def test_a_small_batch_is_encoded_on_the_loop() -> None:
    encoder, calls = _recording_encoder()

    async def run() -> list[list[int]]:
        return await asyncio.gather(*(encoder.encode(text) for text in ("a", "bb", "ccc")))

    assert asyncio.run(run()) == [[1], [2], [3]]
    assert calls == [(["a", "bb", "ccc"], threading.current_thread().name)]


def test_a_new_event_loop_is_not_blocked_by_what_a_dead_one_left() -> None:
    encoder = BatchEncoder(lambda texts: [[len(text)] for text in texts])

    dead = asyncio.new_event_loop()  # a loop that ended with an encode waiting for its flush
    encoder._loop, encoder._pending = dead, [("left behind", dead.create_future())]
    dead.close()
    assert asyncio.run(asyncio.wait_for(encoder.encode("next"), 5)) == [4]


def test_an_encode_error_reaches_every_caller_of_the_batch() -> None:
    def fail(texts: list[str]) -> Any:
        raise ValueError("broken tokenizer")

    encoder = BatchEncoder(fail)

    async def run(size: int) -> list[Any]:
        texts = ("a" * size, "b")
        return await asyncio.gather(*(encoder.encode(text) for text in texts), return_exceptions=True)

    for size in (1, INLINE_CHARS):  # on the loop and in the worker
        assert [str(error) for error in asyncio.run(run(size))] == ["broken tokenizer"] * 2


@pytest.mark.parametrize("capped", [False, True])
def test_reference_engine_output_is_the_same_sync_or_async(qwen_chat: ChatFormat, capped: bool) -> None:  # noqa: F811
    from t3rl_core.engines.base import SamplingParams
    from t3rl_core.engines.reference import _emitted, _generation, as_model_output

    sampling = SamplingParams(max_new_tokens=5 if capped else 1000, stop=("DONE",))
    for text in ("<tool_call>\n{}\n</tool_call>", "all DONE here", "a long answer " * 10):
        emitted, stop = _emitted(qwen_chat, text, calls_tools=True, sampling=sampling)
        async_ids = asyncio.run(qwen_chat.encode_async(emitted))
        assert _generation(async_ids, stop, sampling) == as_model_output(
            qwen_chat, text, calls_tools=True, sampling=sampling
        )
