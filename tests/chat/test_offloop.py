"""Long encodes off the event loop: the ids of a plain encode; short ones stay on the loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.offloop import INLINE_CHARS, WORKERS, OffLoopEncoder
from tests.rollout.fakes import chat, qwen_chat  # noqa: F401

TEXTS = ["hello", "<|im_start|>user\nList my files.<|im_end|>\n", "ünïcödé 中文 🎉", "x y " * INLINE_CHARS]


def test_async_encodes_equal_plain_encodes(chat: ChatFormat) -> None:  # noqa: F811
    async def run() -> list[list[int]]:
        return await asyncio.gather(*(chat.encode_async(text) for text in TEXTS))

    assert asyncio.run(run()) == [chat.encode(text) for text in TEXTS]


def test_long_texts_go_to_a_worker_and_short_ones_stay_on_the_loop() -> None:
    threads: dict[int, str] = {}

    def encode_one(text: str) -> list[int]:
        threads[len(text)] = threading.current_thread().name
        return [len(text)]

    encoder = OffLoopEncoder(encode_one)

    async def run() -> list[list[int]]:
        return [await encoder.encode("s" * 10), await encoder.encode("L" * INLINE_CHARS)]

    assert asyncio.run(run()) == [[10], [INLINE_CHARS]]
    assert threads[10] == threading.current_thread().name
    assert threads[INLINE_CHARS] != threading.current_thread().name


@pytest.mark.parametrize("size", [1, INLINE_CHARS])
def test_an_encode_error_reaches_its_caller(size: int) -> None:
    def fail(text: str) -> Any:
        raise ValueError("broken tokenizer")

    with pytest.raises(ValueError, match="broken tokenizer"):
        asyncio.run(OffLoopEncoder(fail).encode("a" * size))


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


def test_every_encoder_shares_the_processs_workers() -> None:
    """Chat formats come and go (an eval builds one per run): their long encodes share one set of
    worker threads instead of starting new ones each time."""
    threads: set[str] = set()

    def encode_one(text: str) -> list[int]:
        threads.add(threading.current_thread().name)
        return [len(text)]

    async def run() -> None:
        for _ in range(6):
            await asyncio.gather(*(OffLoopEncoder(encode_one).encode("L" * INLINE_CHARS) for _ in range(4)))

    asyncio.run(run())
    assert 1 <= len(threads) <= WORKERS
