"""Encodes asked for in one event-loop iteration, run as one batch in a worker thread.

The rollout loop is single-threaded: every millisecond of tokenization there delays every other
episode's next model call. `tokenizers` releases the GIL while it encodes, so a worker thread
tokenizes on another core while the loop goes on rendering, parsing and stepping other episodes.
Episodes woken in the same loop iteration (engine replies arriving together) ask for their encodes
together; they go to the worker as one `encode_batch` call, so the thread hand-off is paid once per
batch, not once per text. A small batch is encoded on the loop at once: its encode costs less than
the hand-off, and waiting for a busy machine to schedule the worker would delay its episodes' next
model calls. A long text (the first prompt of a new tool list) is encoded on its own, so that the
episodes of short texts never wait for it. The ids are those of a plain encode: only where the work
runs changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# Short texts adding up to fewer characters are encoded on the loop (~1 ms at ~3-4 M characters/s);
# a longer text (a new prompt head) goes to a worker on its own.
INLINE_CHARS = 4096
# Worker threads: a burst of new prompt heads (an eval's start) is encoded on two cores at once.
WORKERS = 2


class BatchEncoder:
    """`await encode(text)` from an event loop; `encode_batch` runs on the loop or in a worker thread."""

    def __init__(self, encode_batch: Callable[[list[str]], list[list[int]]]) -> None:
        self._encode_batch = encode_batch
        self._pending: list[tuple[str, asyncio.Future[list[int]]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor: ThreadPoolExecutor | None = None

    async def encode(self, text: str) -> list[int]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (asyncio.run per batch): what a dead loop left is void
            self._loop, self._pending = loop, []
        future: asyncio.Future[list[int]] = loop.create_future()
        if not self._pending:  # the first encode of this iteration: flush once the iteration is done
            loop.call_soon(self._flush)
        self._pending.append((text, future))
        return await future

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch or self._loop is None:
            return
        small = [item for item in batch if len(item[0]) < INLINE_CHARS]
        if sum(len(text) for text, _ in small) < INLINE_CHARS:
            self._encode_here(small)
        elif small:
            self._offload(small)
        for item in batch:  # each long text on its own, so that no episode waits for another's
            if len(item[0]) >= INLINE_CHARS:
                self._offload([item])

    def _encode_here(self, batch: list[tuple[str, asyncio.Future[list[int]]]]) -> None:
        assert self._loop is not None
        encoded: asyncio.Future[list[list[int]]] = self._loop.create_future()
        try:
            encoded.set_result(self._encode_batch([text for text, _ in batch]))
        except Exception as error:
            encoded.set_exception(error)
        _deliver(encoded, batch)

    def _offload(self, batch: list[tuple[str, asyncio.Future[list[int]]]]) -> None:
        assert self._loop is not None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="t3rl-encode")
        texts = [text for text, _ in batch]
        offloaded = self._loop.run_in_executor(self._executor, self._encode_batch, texts)
        offloaded.add_done_callback(lambda done: _deliver(done, batch))


def _deliver(
    done: asyncio.Future[list[list[int]]], batch: list[tuple[str, asyncio.Future[list[int]]]]
) -> None:
    error = None if done.cancelled() else done.exception()
    for index, (_, future) in enumerate(batch):
        if future.done():  # its episode was cancelled meanwhile
            continue
        if done.cancelled():
            future.cancel()
        elif error is not None:
            future.set_exception(error)
        else:
            future.set_result(done.result()[index])
