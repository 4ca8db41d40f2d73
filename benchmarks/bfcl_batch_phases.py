"""Where the event loop's time goes in a batch of concurrent BFCL episodes (bfcl_concurrency.py's).

The same batch as bfcl_concurrency.py (256 test rows, scripted reference policy, 50 ms engine, a
worker whose caches are warm, each episode rendering and encoding its own prompt), repeated; per batch:
the event-loop thread's CPU (`time.thread_time`, little affected by other work on the machine, unlike
wall time), the part of it the garbage collector took, and when the last episode made its first
model call (every episode's set-up before that delays the batch). Medians (min–max). A diagnostic,
not a target: bfcl_concurrency.py holds the target.

    .venv/bin/python benchmarks/bfcl_batch_phases.py [--episodes 256] [--latency 0.05] [--repeats 7]
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bfcl_common import batch_arguments, batch_rows, make_runner, t3rl_episode, test_rows, trained_tokenizer


class BatchClock:
    """The collector's time and each episode's first model call, during one batch."""

    def __init__(self) -> None:
        self.collector_s = 0.0
        self.first_calls: dict[int, float] = {}
        self._collecting_since = 0.0

    def on_collect(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._collecting_since = time.thread_time()
        else:
            self.collector_s += time.thread_time() - self._collecting_since

    def watch(self, engine: Any) -> None:
        generate = engine.generate

        async def timed(input_ids: list[int], sampling: Any, context: Any = None) -> Any:
            self.first_calls.setdefault(id(context), time.perf_counter())
            return await generate(input_ids, sampling, context)

        engine.generate = timed


def _summary(values: list[float], scale: float = 1.0, unit: str = "s") -> str:
    low, mid, high = (scale * value for value in (min(values), statistics.median(values), max(values)))
    return f"{mid:.3f}{' ' + unit if unit else ''} ({low:.3f}–{high:.3f})"


def main() -> None:
    args = batch_arguments(__doc__.split("\n\n")[0], repeats=7)
    every = test_rows()
    rows = batch_rows(every, args.episodes)
    clock = BatchClock()
    cpu, collector, first_calls, ratios, calls = [], [], [], [], 0
    with tempfile.TemporaryDirectory() as scratch:
        runner = make_runner(args.family, trained_tokenizer(args.family, every, Path(scratch)), args.latency)
        for row in every:  # a worker that has seen every tool list: the heads are cached
            runner.chat.prompt_ids(row["prompt"], row["metadata"]["tools"])

        async def batch(batch_rows: list[dict[str, Any]]) -> list[tuple[float, float, int]]:
            return await asyncio.gather(*(t3rl_episode(runner, row) for row in batch_rows))

        asyncio.run(batch(every[:4]))  # imports, bfcl-eval API classes
        clock.watch(runner.engine)
        gc.callbacks.append(clock.on_collect)
        for _ in range(args.repeats):
            runner.chat._prompt_cache.clear()  # each episode renders and encodes its own prompt
            clock.collector_s, clock.first_calls = 0.0, {}
            started_cpu, started = time.thread_time(), time.perf_counter()
            results = asyncio.run(batch(rows))
            wall = time.perf_counter() - started
            cpu.append(time.thread_time() - started_cpu)
            collector.append(clock.collector_s)
            first_calls.append(max(clock.first_calls.values()) - started)
            calls = sum(count for _, _, count in results)
            ratios.append(wall / (max(count for _, _, count in results) * args.latency))
        gc.callbacks.remove(clock.on_collect)
    print(f"{args.episodes} concurrent BFCL episodes, {calls} model calls a batch, {args.repeats} batches")
    per_call = _summary(cpu, 1000 / calls, "ms")
    print(f"event-loop thread CPU per batch: {_summary(cpu)}; per model call {per_call}")
    print(f"garbage collector per batch: {_summary(collector)} (mean {statistics.mean(collector):.3f} s)")
    print(f"last episode's first model call after: {_summary(first_calls)}")
    print(f"wall / ideal: {_summary(ratios, unit='')}")


if __name__ == "__main__":
    main()
