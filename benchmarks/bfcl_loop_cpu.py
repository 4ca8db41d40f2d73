"""CPU of the BFCL episode loop per model call, against an engine answering in 1 ms.

BFCL test rows are played by the scripted reference policy through t3rl's loop (A: token-in-token-out
deltas, cached prompt heads) and through the conventional loop (B: re-render and re-tokenize the whole
conversation before every call); both sides build the env, parse the model's text with the same action
parser, step the env and score the outcome. Loop CPU = the process CPU time (every thread: off-loop
encodes count) while one episode runs, less the CPU spent inside the engine (the scripted oracle's
work, which a served model does elsewhere), summed over a round of rows and divided by its model calls.
CPU time, not wall time: a neighbour's load on the machine does not count as the loop's work.

The ideal is no loop work at all, so the figure is the loop's whole cost. First A plays rows with
nothing cached ("first sight", printed for reference). Then the steady state of a rollout worker:
every tool list's prompt head seen before, but each row played for the first time (no replayed
episode: its turn deltas are not all cached). A and B alternate on each row; the rows alternate
between idle and one core kept busy by a spinning child process this script starts, pauses and
resumes, and stops (so both conditions meet the same mix of rows and the same cache warmth); the rows
are dealt into rounds (every `--rounds`-th row); medians (min–max) over the rounds per condition.
Target: steady-state A <= 0.5 ms per call in both conditions. The last line is A/B.

    .venv/bin/python benchmarks/bfcl_loop_cpu.py [--rounds 10] [--rows 300] [--latency 0.001]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bfcl_common import (
    EngineCpu,
    loop_cpu,
    make_runner,
    rerender_episode,
    t3rl_episode,
    test_rows,
    trained_tokenizer,
)
from busy_core import Neighbour, label

TARGET_MS = 0.5


def prime_heads(runner, rows) -> None:
    """Every row's prompt head (system messages + tool list) seen, as in a worker that has played
    other rows of the same tool lists: a prompt of each head with a stand-in user message."""
    for row in rows:
        system = [dict(m) for m in row["prompt"] if m.get("role") == "system"]
        runner.chat.prompt_ids([*system, {"role": "user", "content": "."}], row["metadata"]["tools"])


async def first_sight(runner, engine: EngineCpu, rows) -> float:
    """t3rl's loop CPU per call over rows it has never seen, nothing cached (ms)."""
    seconds, calls = 0.0, 0
    for row in rows:
        cpu, count = await loop_cpu(t3rl_episode, runner, engine, row)
        seconds, calls = seconds + cpu, calls + count
    return 1000 * seconds / calls


async def round_of(runner, engine: EngineCpu, rows, neighbour: Neighbour) -> dict[tuple[bool, str], float]:
    """A and B on each row, rows alternately idle and busy: loop CPU per call per (busy, side) (ms)."""
    totals: dict[tuple[bool, str], list[float]] = {}
    for number, row in enumerate(rows):
        busy = number % 2 == 1
        neighbour.busy(busy)
        for side, play in (("t3rl", t3rl_episode), ("re-render", rerender_episode)):
            cpu, calls = await loop_cpu(play, runner, engine, row)
            total = totals.setdefault((busy, side), [0.0, 0])
            total[0] += cpu
            total[1] += calls
    neighbour.busy(False)
    return {key: 1000 * seconds / calls for key, (seconds, calls) in totals.items()}


def _load(averages: tuple[float, float, float]) -> str:
    return " ".join(f"{value:.2f}" for value in averages)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="qwen3")
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--first-sight", type=int, default=40, help="rows played cold, before the rounds")
    parser.add_argument("--latency", type=float, default=0.001, help="engine seconds per call")
    args = parser.parse_args()
    every = test_rows()
    rows = every[: args.rows]
    per_call: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch, Neighbour() as neighbour:
        tokenizer = trained_tokenizer(args.family, every, Path(scratch))
        for warm_up in (True, False):  # first imports, template compilation, API classes
            cold_runner = make_runner(args.family, tokenizer, args.latency)
            sample = every[:: max(1, len(every) // args.first_sight)][: 3 if warm_up else args.first_sight]
            cold = asyncio.run(first_sight(cold_runner, EngineCpu(cold_runner), sample))
        runner = make_runner(args.family, tokenizer, args.latency)  # its caches never saw a row
        engine = EngineCpu(runner)
        prime_heads(runner, rows)
        for number in range(args.rounds):
            measured = asyncio.run(round_of(runner, engine, rows[number :: args.rounds], neighbour))
            for (busy, side), value in measured.items():
                per_call[busy].setdefault(side, []).append(value)
    print(f"t3rl      loop CPU per model call, first sight of rows and tool lists: {cold:.3f} ms")
    # CPU time still grows with the load (shared caches and cores): a figure is read beside it.
    print(f"load average (1, 5, 15 min) before: {_load(load_before)}, after: {_load(os.getloadavg())}")
    met, medians = True, {}
    for busy, sides in per_call.items():
        for side, values in sides.items():
            medians[busy, side] = statistics.median(values)
            print(
                f"{side:9s} {label(busy):13s} loop CPU per model call, steady state: median "
                f"{medians[busy, side]:.3f} ms (min {min(values):.3f}, max {max(values):.3f}; "
                f"{len(values)} rounds of {len(rows) // args.rounds // 2} new rows)"
            )
        met &= medians[busy, "t3rl"] <= TARGET_MS
    print(
        f"target steady-state t3rl <= {TARGET_MS} ms per call, idle and one core busy: "
        f"{'met' if met else 'NOT met'}"
    )
    print(
        "ratio t3rl / re-render loop CPU per call: "
        + "; ".join(f"{label(b)} {medians[b, 't3rl'] / medians[b, 're-render']:.3f}" for b in per_call)
        + "; t3rl steady state: "
        + "; ".join(f"{label(b)} {medians[b, 't3rl']:.3f} ms" for b in per_call)
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
