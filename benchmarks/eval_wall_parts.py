"""Where `eval_concurrency.py`'s wall beyond the ideal goes, for one or more trees run alternately.

Each eval's engine calls' start and end times (the reference engine's `generate`, wrapped) split its
wall into: the ideal (model calls x latency / concurrency); before the first call (from `run_eval`'s
start); the slots still empty until all `--concurrency` held a call; slots empty in the middle (a
slot between calls while the loop sets up the next one); at the end (empty slots after the last call
started: the bound's own remainder, calls mod concurrency, and the episodes that end apart); after
the last call (the summary, closing); and the calls ending late (beyond the latency: timers of a
busy loop). Slot-seconds are divided by the concurrency, so the parts add up to the wall. Also the
event loop's thread CPU until all slots held a call, and the loop's and the process's CPU of the
whole eval.

Per model call, the two delays a slot sees beyond the latency, split by cause (the loop's selector
records each wait that may block, the engine call each episode's reply and next call):
- late (the engine's timer, due at the call's start + latency): "waking", the loop waiting in its
  selector when the timer came due and waking after it (the wait rounded up to whole milliseconds,
  the kernel's wake-up, the core taken by others); "queued", the loop running other callbacks first;
- the gap between a reply and the same episode's next call, when no other callback ran in between:
  the loop thread's CPU (the reply's parse, the env's step, the next prompt's build and encode: the
  episode's own work) and the rest of that wall (the GIL or the core held elsewhere); a gap with
  other callbacks in it (the episode waited for a worker thread's encode) is counted apart;
- a handover: the k-th episode's last reply to the first call of the k-th episode after the first
  wave (the next one to take a slot): the episode's last step and scoring, its slot's release, and the
  next episode's set-up if not done yet and its wake-up; the median, and all of them in wall time
  (slot-seconds / concurrency, as the parts).

With `--trees A B …`, each round runs one process per tree in turn (PYTHONPATH=<tree>; a `git
archive` snapshot to compare against), each a warm-up eval at latency 0 then `--evals` timed ones,
with the previous eval's garbage collected first, as eval_concurrency.py does. Medians of each part
per tree. A diagnostic on a shared machine (every part moves with the neighbours' load): the target
is eval_concurrency.py's.

    .venv/bin/python benchmarks/eval_wall_parts.py [--trees DIR …] [--rounds 3] [--evals 2] [--busy]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import functools
import gc
import io
import itertools
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from busy_core import condition, label

PARTS = ("before first call", "until all slots", "empty mid-run", "at the end", "after last call", "late")
PER_CALL = ("late waking", "late queued", "gap CPU", "gap rest", "gap awaiting")


class WaitTimes(selectors.BaseSelector):
    """A mix-in for the eval loop's selector: counts its calls, keeps (start, end) of each that may block."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[tuple[float, float]] = []
        self.count = 0  # one a loop iteration: a callback other than the current one may have run

    def select(self, timeout: float | None = None) -> list[Any]:
        self.count += 1
        if timeout is not None and timeout <= 0:
            return super().select(timeout)
        begin = time.perf_counter()
        try:
            return super().select(timeout)
        finally:
            self.waits.append((begin, time.perf_counter()))


# One engine call: (episode, start, reply, loop thread CPU at start and at reply, selector calls then).
Call = tuple[str, float, float, float, float, int, int]


def _per_call(
    calls: list[Call], waits: list[tuple[float, float]], latency: float, slots: int
) -> dict[str, float]:
    """Mean seconds a model call of PER_CALL (module docstring); the gaps' means are per gap."""
    waking = queued = 0.0
    starts = [begin for begin, _ in waits]
    for _, begin, end, *_ in calls:
        due = begin + latency
        index = bisect.bisect_right(starts, due) - 1
        woke = min(waits[index][1], end) if index >= 0 and waits[index][1] > due else due
        waking += max(0.0, woke - due)
        queued += max(0.0, end - woke)
    own = rest = awaiting = 0.0
    gaps = awaited = 0
    longest: list[float] = []
    by_episode: dict[str, list[Call]] = {}
    for call in sorted(calls, key=lambda call: call[1]):
        by_episode.setdefault(call[0], []).append(call)
    for found in by_episode.values():
        for before, after in itertools.pairwise(found):
            gaps += 1
            wall = after[1] - before[2]
            if after[5] == before[6]:  # no loop iteration in between: one callback, the episode's
                own += after[3] - before[4]
                rest += wall - (after[3] - before[4])
            else:
                awaiting += wall
                awaited += 1
                longest.append(wall)
    lasts = sorted(found[-1][2] for found in by_episode.values())
    firsts = sorted(found[0][1] for found in by_episode.values())[slots:]
    handovers = [first - last for last, first in zip(lasts, firsts, strict=False)]
    return {
        "handover": statistics.median(handovers) if handovers else float("nan"),
        "handovers": sum(handovers) / slots,
        "late waking": waking / len(calls),
        "late queued": queued / len(calls),
        "gap CPU": own / gaps,
        "gap rest": rest / gaps,
        "gap awaiting": awaiting / gaps,
        "gaps awaiting": awaited,
        "gaps": gaps,
        "longest awaits": sorted(longest)[-3:],
    }


def _parts(
    calls: list[tuple[float, float]], started: float, ended: float, slots: int, latency: float
) -> dict:
    """The wall's parts (seconds) from the calls' (start, end) times; `started`/`ended`: run_eval's."""
    events = sorted([(begin, 1) for begin, _ in calls] + [(end, -1) for _, end in calls])
    first, last_start = min(b for b, _ in calls), max(b for b, _ in calls)
    last_end = max(e for _, e in calls)
    empty = {"fill": 0.0, "mid": 0.0, "tail": 0.0}
    held, at, full = 0, first, False
    for moment, change in events:
        phase = "tail" if at >= last_start else ("mid" if full else "fill")
        empty[phase] += max(0, slots - held) * (moment - at)
        held += change
        full = full or held >= slots
        at = moment
    late = sum(end - begin - latency for begin, end in calls)
    return {
        "ideal": len(calls) * latency / slots,
        "before first call": first - started,
        "until all slots": empty["fill"] / slots,
        "empty mid-run": empty["mid"] / slots,
        "at the end": empty["tail"] / slots,
        "after last call": ended - last_end,
        "late": late / slots,
    }


def child(latency: float, concurrency: int, evals: int) -> None:
    """One process of a tree (its t3rl_core on PYTHONPATH): a JSON line of parts per timed eval."""
    from eval_concurrency import bfcl_eval_runtime

    from t3rl_core.engines.reference import ReferenceEngine
    from t3rl_core.envs.bfcl.config import BFCLEnvConfig
    from t3rl_core.envs.bfcl.data import build_rows
    from t3rl_core.eval.config import EvalConfig
    from t3rl_core.eval.runner import run_eval

    try:  # the selector `t3rl eval`'s loop runs on; a tree before t3rl_core.eval.loop: asyncio.run's
        from t3rl_core.eval.loop import PreciseSelector as selector_class
    except ImportError:
        selector_class = selectors.DefaultSelector
    recording = type("Recording", (WaitTimes, selector_class), {})

    calls: list[Call] = []
    filled: list[float] = []  # the loop thread's CPU when all slots first held a call
    in_flight = [0]
    generate = ReferenceEngine.generate
    selector = recording()  # the current eval's (its loop closes it)

    async def timed(engine: Any, *args: Any, **kwargs: Any) -> Any:
        count = selector.count
        begin, cpu = time.perf_counter(), time.thread_time()
        task = asyncio.current_task()
        in_flight[0] += 1
        if in_flight[0] == concurrency and not filled:
            filled.append(cpu)
        try:
            return await generate(engine, *args, **kwargs)
        finally:
            in_flight[0] -= 1
            reply, reply_cpu = time.perf_counter(), time.thread_time()
            episode = task.get_name() if task else ""
            calls.append((episode, begin, reply, cpu, reply_cpu, count, selector.count))

    ReferenceEngine.generate = timed  # type: ignore[method-assign]
    runtime = bfcl_eval_runtime()
    rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
    for index in range(evals + 1):
        config = EvalConfig.model_validate(
            {
                "engine": {"name": "reference", "latency_s": latency if index else 0.0},
                "concurrency": concurrency,
            }
        )
        calls.clear()
        filled.clear()
        selector = recording()
        gc.collect()
        with (
            tempfile.TemporaryDirectory() as out,
            contextlib.redirect_stdout(io.StringIO()),
            asyncio.Runner(loop_factory=functools.partial(asyncio.SelectorEventLoop, selector)) as loop,
        ):
            started, loop_start, cpu = time.perf_counter(), time.thread_time(), time.process_time()
            loop.run(run_eval(runtime, config, rows, Path(out), show_progress=False))
            ended = time.perf_counter()
            loop_cpu, cpu = time.thread_time() - loop_start, time.process_time() - cpu
        if not index:
            continue  # the warm-up: imports, API classes, parsers
        parts = _parts([(begin, end) for _, begin, end, *_ in calls], started, ended, concurrency, latency)
        parts |= _per_call(calls, selector.waits, latency, concurrency)
        # The loop's wall outside its waits beyond its thread's CPU: off the core (or without the GIL).
        waited = sum(end - begin for begin, end in selector.waits)
        parts["loop off-core"] = ended - started - waited - loop_cpu
        parts |= {
            "wall": ended - started,
            "calls": len(calls),
            "slots": concurrency,
            "loop CPU until all slots": (filled[0] if filled else float("nan")) - loop_start,
            "loop CPU": loop_cpu,
            "process CPU": cpu,
            "load": os.getloadavg()[0],
        }
        print(json.dumps(parts), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs="+", default=[str(Path(__file__).resolve().parent.parent)])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--evals", type=int, default=2, help="timed evals per process")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--busy", action="store_true", help="one core kept busy (benchmarks/busy_core.py)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.latency, args.concurrency, args.evals)
        return 0
    runs: dict[str, list[dict[str, float]]] = {tree: [] for tree in args.trees}
    command = [sys.executable, __file__, "--child", "--latency", str(args.latency)]
    command += ["--concurrency", str(args.concurrency), "--evals", str(args.evals)]
    with condition(args.busy):
        for _ in range(args.rounds):
            for tree in args.trees:
                env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
                done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                for line in done.stdout.splitlines():
                    run = json.loads(line)
                    runs[tree].append(run)
                    print(f"{tree}: " + _line(run), flush=True)
    print(f"medians ({label(args.busy)}), ms unless said:")
    for tree, found in runs.items():
        median = {
            key: statistics.median(run[key] for run in found)
            for key in found[0]
            if not isinstance(found[0][key], list)
        }
        print(f"{tree}: " + _line(median))
    return 0


def _line(run: dict[str, float]) -> str:
    ms = {key: 1000 * value for key, value in run.items()}
    parts = "; ".join(f"{name} {ms[name]:.0f}" for name in PARTS)
    return (
        f"ratio {run['ideal'] / run['wall']:.3f} (load {run['load']:.1f}); wall {ms['wall']:.0f}, "
        f"ideal {ms['ideal']:.0f}: {parts}; late per call {ms['late'] * run['slots'] / run['calls']:.1f} ("
        + ", ".join(f"{name} {ms[name]:.2f}" for name in PER_CALL[:2])
        + "); a gap between calls: "
        + ", ".join(f"{name} {ms[name]:.2f}" for name in PER_CALL[2:])
        + f" ({run['gaps awaiting']:.0f} of {run['gaps']:.0f} gaps awaited something; the longest "
        + ", ".join(f"{1000 * wait:.0f}" for wait in run.get("longest awaits", ()))
        + f"); a handover {ms['handover']:.2f} (median; all {ms['handovers']:.0f} of the wall); "
        f"loop CPU until all slots {ms['loop CPU until all slots']:.0f}, of the eval {ms['loop CPU']:.0f}, "
        f"process CPU {ms['process CPU']:.0f}; the loop, not waiting, off its core {ms['loop off-core']:.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
