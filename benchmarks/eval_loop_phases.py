"""Where `eval_concurrency.py`'s wall goes: slot occupancy, model-call delays and the event loop's CPU.

The same eval (all 300 BFCL test tasks, the reference engine, `--latency`, `--concurrency` in flight),
instrumented. Printed per run: the wall against the ideal (model calls x latency / concurrency); the
share of slot-seconds with an episode holding a slot (from its first model call to its end; its
set-up runs ahead, t3rl_core/eval/slots.py); the mean engine call (latency plus the delay of its
timer on a busy loop) and the mean time per model call an episode spends beyond the latency; the loop's
CPU (thread time of every callback) as a histogram of callback lengths, with the callbacks over 10 ms
named; the collector's pauses; and the eval's two ends (when its slots were all filled, how the
last episodes' ends spread out). Then, at latency 0 with one episode in flight, the loop's CPU per
episode phase: set-up to the first model call, between calls, after the last (scoring), and the
trajectory line. Instrumentation adds a little CPU of its own; the figures are for finding the work,
not for the target (that is `eval_concurrency.py`).

    .venv/bin/python benchmarks/eval_loop_phases.py [--latency 0.05] [--concurrency 32] [--repeats 2]
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.events
import contextlib
import gc
import io
import statistics
import sys
import tempfile
import time
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

from eval_concurrency import bfcl_eval_runtime

from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.eval import resume as resuming
from t3rl_core.eval import runner as eval_runner
from t3rl_core.eval.config import EvalConfig

BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.02, float("inf"))


class Probe:
    """Wraps the engine call, the episode, the trajectory write, every loop callback and the collector."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float]] = []  # engine call (start, end), wall
        # (first model call, end, model calls), wall: a slot is held from an episode's first call
        self.episodes: list[tuple[float, float, int]] = []
        self.first_call: dict[asyncio.Task[Any] | None, float] = {}
        self.callbacks: list[float] = []
        self.long: list[str] = []
        self.collections: list[float] = []
        self.phases = Counter[str]()
        self.mark = 0.0  # thread time of the current episode's last event (one episode in flight)
        self.started = 0.0
        generate, run_episode, write = ReferenceEngine.generate, eval_runner._run_episode, resuming.write
        handle_run = asyncio.events.Handle._run
        probe = self

        async def timed_generate(engine: Any, *args: Any, **kwargs: Any) -> Any:
            begin, cpu = time.perf_counter(), time.thread_time()
            probe.first_call.setdefault(asyncio.current_task(), begin)
            probe.phases["set-up" if probe.phases_first else "between calls"] += cpu - probe.mark
            probe.phases_first = False
            result = await generate(engine, *args, **kwargs)
            probe.mark = time.thread_time()
            probe.phases["engine"] += probe.mark - cpu
            probe.calls.append((begin, time.perf_counter()))
            return result

        async def timed_episode(*args: Any) -> Any:
            probe.mark, probe.phases_first = time.thread_time(), True
            record = await run_episode(*args)
            probe.phases["after the last call"] += time.thread_time() - probe.mark
            probe.mark = time.thread_time()
            end = time.perf_counter()
            begin = probe.first_call.pop(asyncio.current_task(), end)
            probe.episodes.append((begin, end, record.get("num_model_calls") or 0))
            return record

        def timed_write(*args: Any, **kwargs: Any) -> Any:
            result = write(*args, **kwargs)
            probe.phases["trajectory line"] += time.thread_time() - probe.mark
            return result

        def timed_callback(handle: Any) -> None:
            cpu = time.thread_time()
            handle_run(handle)
            spent = time.thread_time() - cpu
            probe.callbacks.append(spent)
            if spent > 0.01:
                coro = getattr(getattr(handle._callback, "__self__", None), "get_coro", lambda: None)()
                name = getattr(coro, "__qualname__", repr(handle._callback))
                probe.long.append(
                    f"{name} {1000 * spent:.0f} ms at {time.perf_counter() - probe.started:.2f} s"
                )

        def collector(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                probe.collecting = time.thread_time()
            else:
                probe.collections.append(time.thread_time() - probe.collecting)

        self.phases_first, self.collecting = True, 0.0
        ReferenceEngine.generate = timed_generate  # type: ignore[method-assign]
        eval_runner._run_episode = timed_episode
        eval_runner.resuming.write = timed_write
        asyncio.events.Handle._run = timed_callback  # type: ignore[method-assign]
        gc.callbacks.append(collector)

    def reset(self) -> None:
        for values in (self.calls, self.episodes, self.callbacks, self.long, self.collections):
            values.clear()
        self.phases.clear()
        self.started = time.perf_counter()


def run(runtime: Any, rows: list, latency: float, concurrency: int) -> float:
    config = EvalConfig.model_validate(
        {"engine": {"name": "reference", "latency_s": latency}, "concurrency": concurrency}
    )
    gc.collect()  # the previous run's garbage first, as eval_concurrency.py does (outside the clock)
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        started = time.perf_counter()
        asyncio.run(eval_runner.run_eval(runtime, config, rows, Path(out), show_progress=False))
        return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    runtime = bfcl_eval_runtime()
    rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
    probe = Probe()
    run(runtime, rows, 0.0, 1)  # warm-up: imports, API classes, parsers
    for _ in range(args.repeats):
        probe.reset()
        wall = run(runtime, rows, args.latency, args.concurrency)
        calls = sum(n for _, _, n in probe.episodes)
        busy = sum(end - begin for begin, end, _ in probe.episodes)
        beyond = statistics.mean(
            (end - begin - n * args.latency) / n for begin, end, n in probe.episodes if n
        )
        engine = statistics.mean(end - begin for begin, end in probe.calls)
        print(
            f"wall {wall:.2f} s, ideal {calls * args.latency / args.concurrency:.2f} s; slots busy "
            f"{busy / (args.concurrency * wall):.0%}; engine call {1000 * engine:.1f} ms; per model call "
            f"beyond the latency {1000 * beyond:.1f} ms; loop CPU {sum(probe.callbacks):.2f} s in "
            f"{len(probe.callbacks)} callbacks; collector {len(probe.collections)} pauses, "
            f"{sum(probe.collections):.3f} s"
        )
        bounds = [0.0, *BUCKETS]
        histogram = []
        for low, high in pairwise(bounds):
            inside = [spent for spent in probe.callbacks if low <= spent < high]
            histogram.append(f"{1000 * low:g}-{1000 * high:g} ms: {len(inside)} ({sum(inside):.2f} s)")
        print("  callbacks " + "; ".join(histogram))
        print("  over 10 ms: " + "; ".join(probe.long))
        # The eval's two ends: how long its slots took to fill and how the last episodes spread out.
        firsts = sorted(begin - probe.started for begin, _, _ in probe.episodes)[: args.concurrency]
        lasts = sorted(end - probe.started for _, end, _ in probe.episodes)[-args.concurrency :]
        print(
            f"  the first {len(firsts)} episodes' first calls from {1000 * firsts[0]:.0f} to "
            f"{1000 * firsts[-1]:.0f} ms; the last {len(lasts)} episodes ended from {lasts[0]:.2f} to "
            f"{lasts[-1]:.2f} s (median {statistics.median(lasts):.2f} s)"
        )
    probe.reset()
    # One episode alive at a time (none set up ahead): the phases of one episode, not of two interleaved.
    eval_runner.ahead_for = lambda slots: 0
    run(runtime, rows, 0.0, 1)
    episodes = len(probe.episodes)
    print(
        f"latency 0, one in flight, loop CPU per episode ({episodes}): "
        + "; ".join(f"{name} {1000 * seconds / episodes:.2f} ms" for name, seconds in probe.phases.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
