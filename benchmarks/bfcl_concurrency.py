"""256 concurrent BFCL episodes on one event loop against an engine answering in 50 ms.

BFCL test rows (256 of 300) are played at once by the scripted reference policy through t3rl's loop,
as one rollout batch of a worker whose caches are warm (every tool list seen before; each episode
still renders and encodes its own prompt). The ideal is the longest episode's model calls x latency:
what the batch takes when the loop's own CPU hides entirely inside the engine's latency. Several
repeats; medians (min–max) of wall / ideal. Target: <= 1.25. The last line is the ratio.

    .venv/bin/python benchmarks/bfcl_concurrency.py [--episodes 256] [--latency 0.05] [--repeats 3]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bfcl_common import batch_arguments, batch_rows, make_runner, t3rl_episode, test_rows, trained_tokenizer

TARGET_RATIO = 1.25


async def batch(runner, rows) -> tuple[float, list[int]]:
    started = time.perf_counter()
    results = await asyncio.gather(*(t3rl_episode(runner, row) for row in rows))
    return time.perf_counter() - started, [calls for _, _, calls in results]


def main() -> int:
    args = batch_arguments(__doc__.split("\n\n")[0], repeats=3)
    every = test_rows()
    rows = batch_rows(every, args.episodes)
    with tempfile.TemporaryDirectory() as scratch:
        runner = make_runner(args.family, trained_tokenizer(args.family, every, Path(scratch)), args.latency)
        for row in every:  # a worker that has seen every tool list: the heads are cached
            runner.chat.prompt_ids(row["prompt"], row["metadata"]["tools"])
        asyncio.run(batch(runner, every[:4]))  # imports, bfcl-eval API classes
        ratios, walls, ideal = [], [], 0.0
        for _ in range(args.repeats):
            runner.chat._prompt_cache.clear()  # each episode renders and encodes its own prompt
            wall, calls = asyncio.run(batch(runner, rows))
            ideal = max(calls) * args.latency
            walls.append(wall)
            ratios.append(wall / ideal)
    median = statistics.median(ratios)
    print(
        f"{args.episodes} concurrent BFCL episodes, {args.latency * 1000:.0f} ms per call: "
        f"ideal {ideal:.2f} s (longest episode {round(ideal / args.latency)} calls); "
        f"wall median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f})"
    )
    met = median <= TARGET_RATIO
    print(f"target wall / ideal <= {TARGET_RATIO}: {'met' if met else 'NOT met'}")
    print(f"ratio wall / ideal: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
