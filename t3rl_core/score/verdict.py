"""The result of scoring one trajectory, and running a coroutine from sync code inside or outside a loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Verdict:
    """One trajectory's score: the reward, whether it counts as solved, and the world's own details."""

    world: str
    id: str | None
    reward: float
    success: bool
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)`, or, when called from inside a running event loop (a notebook, a server),
    the same on a worker thread with its own loop, since a running loop cannot be re-entered."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="t3rl-score") as pool:
        return pool.submit(asyncio.run, coroutine).result()
