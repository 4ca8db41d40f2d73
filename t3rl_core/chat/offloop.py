"""Long encodes run off the event loop, in worker threads; short ones stay on it.

The rollout loop is single-threaded: while it encodes a new tool list's first prompt (~15k characters,
several ms) every other episode waits for its next model call. `tokenizers` releases the GIL while it
encodes, so such a text goes to a worker thread and the loop goes on serving the other episodes.
A short text (a turn delta, a prompt's rest after its cached head) is encoded on the loop at once:
handing it to a thread would cost more than its encode, and its episode would only go on in a later
loop iteration, after every other episode woken with it, which serialises what the engine's latency
would otherwise hide. The ids are those of a plain encode: only where the work runs changes.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# Texts this long or longer go to a worker (~1 ms of encoding at ~3-4 M characters/s).
INLINE_CHARS = 4096
# Worker threads: a burst of new prompt heads (an eval's start) is encoded on two cores at once.
WORKERS = 2

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    """The process's encode workers, shared by every chat format: a thread is a process resource, and
    starting one blocks the loop until it runs (a new eval's first long encodes waited for two)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="t3rl-encode")
        return _pool


class OffLoopEncoder:
    """`await encode(text)`: `encode_one(text)` on the loop when short, in a worker thread when long."""

    def __init__(self, encode_one: Callable[[str], list[int]]) -> None:
        self._encode_one = encode_one

    async def encode(self, text: str) -> list[int]:
        if len(text) < INLINE_CHARS:
            return self._encode_one(text)
        return await asyncio.get_running_loop().run_in_executor(_workers(), self._encode_one, text)
