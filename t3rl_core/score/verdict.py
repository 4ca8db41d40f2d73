"""The result of scoring one trajectory, and running a coroutine from sync code inside or outside a loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from t3rl_core.finite import as_score, verdict_flag

T = TypeVar("T")


@dataclass(frozen=True)
class Verdict:
    """One trajectory's score: the reward, whether it counts as solved, and the world's own details."""

    world: str
    id: str | None
    reward: float
    success: bool
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Every world's scorer ends here: a reward that is no finite number (None, NaN, a text) or a
        success that is no bool (NaN is true to bool()) is MissingScore naming the world and task,
        never a verdict of 0 or of solved."""
        source = f"the {self.world} verdict of task {self.id!r}"
        object.__setattr__(self, "reward", as_score(self.reward, f"{source}: reward"))
        object.__setattr__(self, "success", verdict_flag({"success": self.success}, "success", source))

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
