"""The event loop `t3rl eval` runs on: asyncio's, with timers that wake it when due, not a millisecond on.

On Linux asyncio waits in epoll_wait(2), whose timeout is whole milliseconds: the selector rounds each
wait up, so a timer due in 12.3 ms wakes the loop at 13 ms at the earliest, and the timer whose turn
comes first is any episode's (benchmarks/eval_wall_parts.py's "late waking"). A served model's reply
wakes the loop through its socket at once; what comes due by a timer (the reference engine's latency,
a tool-call worker's budget, a retry's back-off) came up to a millisecond late, on a loop where an eval
of the 300 BFCL test tasks waits for 2,374 replies.

Here a wait with a timeout is made in select(2) on the epoll descriptor itself, whose timeout is in
microseconds; that descriptor is readable as soon as any descriptor registered with it is ready, so
I/O wakes the wait as before, and a zero-timeout epoll_wait then collects the events. select(2) takes
descriptors below FD_SETSIZE only: with the epoll descriptor at or above it (a process with a thousand
files open) the wait is epoll_wait's, rounded up, as before. Elsewhere (kqueue's timeouts are in
nanoseconds) the loop is asyncio's default.
"""

from __future__ import annotations

import asyncio
import select
import selectors
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# select(2)'s descriptor sets hold descriptors below this (Linux's FD_SETSIZE).
FD_SETSIZE = 1024

if hasattr(selectors, "EpollSelector"):

    class PreciseSelector(selectors.EpollSelector):
        """An epoll selector whose waits end when their timeout does, to the microsecond."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is None or timeout <= 0:
                return super().select(timeout)
            epoll = self.fileno()
            if epoll >= FD_SETSIZE:
                return super().select(timeout)
            select.select([epoll], [], [], timeout)
            return super().select(0)

    def new_loop() -> asyncio.AbstractEventLoop:
        """A loop for one eval (`asyncio.Runner(loop_factory=new_loop)`)."""
        return asyncio.SelectorEventLoop(PreciseSelector())

else:  # pragma: no cover - not Linux

    def new_loop() -> asyncio.AbstractEventLoop:
        """asyncio's default loop: its selector's timeouts are precise already."""
        return asyncio.new_event_loop()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(coroutine)` on `new_loop()`."""
    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(coroutine)
