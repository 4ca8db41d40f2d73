"""CPU of the BFCL episode loop per model call, against an engine answering in 1 ms.

BFCL test rows (the first 150 of 300 by default; 81 distinct tool lists in all 300) are played by the
scripted reference policy through t3rl's loop (A: token-in-token-out deltas, cached prompt heads) and
through the conventional loop (B: re-render and re-tokenize the whole conversation before every
call); both sides build the env, parse the model's text with the same action parser, step the env
and score the outcome. Loop CPU = an episode's wall time minus the time awaiting the engine, summed
over a round of rows and divided by its model calls.

First A plays every row once with nothing cached ("first sight": each new tool list's head is
encoded whole, once per process). Then, in the steady state of a rollout worker (every tool list
seen; each episode still renders and encodes its own prompt), A and B alternate row by row; the rows
are cut into rounds and the medians (min–max) over rounds are printed. Target: steady-state
A <= 1.0 ms per call. The last line is A/B.

    .venv/bin/python benchmarks/bfcl_loop_cpu.py [--rounds 5] [--rows 150] [--latency 0.001]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

from bfcl_common import make_runner, rerender_episode, t3rl_episode, test_rows, trained_tokenizer

TARGET_MS = 1.0


async def first_sight(runner, rows) -> float:
    """t3rl's loop CPU per call over rows it has never seen (ms)."""
    loop, calls = 0.0, 0
    for row in rows:
        total, generation, count = await t3rl_episode(runner, row)
        loop, calls = loop + total - generation, calls + count
    return 1000 * loop / calls


async def rounds_of(runner, rows, rounds: int) -> dict[str, list[float]]:
    per_call: dict[str, list[float]] = {"t3rl": [], "re-render": []}
    size = max(1, len(rows) // rounds)
    for start in range(0, size * rounds, size):
        loop = {"t3rl": [0.0, 0], "re-render": [0.0, 0]}
        for row in rows[start : start + size]:
            for side, play in (("t3rl", t3rl_episode), ("re-render", rerender_episode)):
                total, generation, calls = await play(runner, row)
                loop[side][0] += total - generation
                loop[side][1] += calls
        for side, (seconds, calls) in loop.items():
            per_call[side].append(1000 * seconds / calls)
    return per_call


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="qwen3")
    parser.add_argument("--rows", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.001, help="engine seconds per call")
    args = parser.parse_args()
    rows = test_rows()[: args.rows]
    with tempfile.TemporaryDirectory() as scratch:
        runner = make_runner(args.family, trained_tokenizer(args.family, rows, Path(scratch)), args.latency)
        warm = [row for row in test_rows() if row["metadata"]["split"] == "test"][-3:]
        asyncio.run(rounds_of(runner, warm, 1))  # imports, template compilation, bfcl-eval API classes
        runner.chat._prompt_cache.clear()
        runner.chat._heads._heads.clear()
        cold = asyncio.run(first_sight(runner, rows))
        runner.chat._prompt_cache.clear()  # every episode renders and encodes its prompt again
        per_call = asyncio.run(rounds_of(runner, rows, args.rounds))
    medians = {side: statistics.median(values) for side, values in per_call.items()}
    print(f"t3rl      loop CPU per model call, first sight of every row and tool list: {cold:.3f} ms")
    for side, values in per_call.items():
        print(
            f"{side:9s} loop CPU per model call, steady state: median {medians[side]:.3f} ms "
            f"(min {min(values):.3f}, max {max(values):.3f}; "
            f"{len(values)} rounds of {len(rows) // args.rounds} rows)"
        )
    met = medians["t3rl"] <= TARGET_MS
    print(f"target steady-state t3rl <= {TARGET_MS} ms per call: {'met' if met else 'NOT met'}")
    print(f"ratio t3rl / re-render loop CPU per call: {medians['t3rl'] / medians['re-render']:.2f}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
