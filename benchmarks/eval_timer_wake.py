"""How late a 50 ms engine call's timer wakes the loop: asyncio's default loop against `t3rl eval`'s.

The reference engine's call (t3rl_core/engines/reference.py) works out its reply, then sleeps until its
call's start + the latency; with `--concurrency` calls in flight the loop's next wait ends at whichever
timer comes first, a fraction of a millisecond away as often as not. asyncio's epoll selector waits
whole milliseconds, rounded up (and up again when the float of a whole millisecond lies above it:
0.013 s became 14 ms of epoll_wait); t3rl_core/eval/loop.py waits in select(2) to the microsecond.
Here `--concurrency` tasks each make `--calls` such calls, the engine's reply stood in for by
`--work` seconds of CPU on the loop before the sleep, and each call's lateness (its end beyond its
start + latency) is kept. The loops alternate round by round in one process; per loop the median and
mean lateness of a call and the wall against the ideal (calls x latency / concurrency). A diagnostic of
eval_concurrency.py's "late" part (benchmarks/eval_wall_parts.py's "late waking"), not a target.

    .venv/bin/python benchmarks/eval_timer_wake.py [--rounds 5] [--busy]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable

from busy_core import condition, label

from t3rl_core.eval.loop import new_loop


async def calls(latency: float, concurrency: int, count: int, work: float) -> list[float]:
    """Each call's lateness, seconds: `concurrency` tasks of `count` calls each."""
    lateness: list[float] = []

    async def episode() -> None:
        for _ in range(count):
            start = time.monotonic()
            spent = time.thread_time()
            while time.thread_time() - spent < work:  # the reply worked out within the latency
                pass
            left = start + latency - time.monotonic()
            if left > 0:
                await asyncio.sleep(left)
            lateness.append(time.monotonic() - start - latency)

    await asyncio.gather(*(episode() for _ in range(concurrency)))
    return lateness


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--calls", type=int, default=40, help="calls per task and round")
    parser.add_argument("--work", type=float, default=0.0004, help="CPU seconds on the loop a call")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--busy", action="store_true", help="one core kept busy (benchmarks/busy_core.py)")
    args = parser.parse_args()
    loops: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
        "asyncio's default": asyncio.new_event_loop,
        "t3rl eval's": new_loop,
    }
    late: dict[str, list[float]] = {name: [] for name in loops}
    walls: dict[str, list[float]] = {name: [] for name in loops}
    with condition(args.busy):
        for _ in range(args.rounds):
            for name, factory in loops.items():
                with asyncio.Runner(loop_factory=factory) as runner:
                    start = time.perf_counter()
                    late[name] += runner.run(calls(args.latency, args.concurrency, args.calls, args.work))
                    walls[name].append(time.perf_counter() - start)
    ideal = args.calls * args.latency
    print(
        f"{label(args.busy)}: {args.concurrency} tasks x {args.calls} calls of {args.latency * 1000:.0f} ms, "
        f"{args.work * 1000:.2f} ms of loop CPU a call, {args.rounds} rounds alternating"
    )
    for name in loops:
        print(
            f"{name} loop: a call late by median {1000 * statistics.median(late[name]):.2f} ms, mean "
            f"{1000 * statistics.mean(late[name]):.2f} ms; ideal / wall median "
            f"{statistics.median(ideal / wall for wall in walls[name]):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
