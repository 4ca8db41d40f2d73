"""Many concurrent episodes on one event loop against an engine with a fixed per-call latency.

64 episodes of the same length run at once against the scripted policy with 50 ms per call (as a
served model would answer); the loop's own work has to hide inside that latency. Side by side: one
episode alone, and the ideal, model calls x latency.

    .venv/bin/python benchmarks/concurrency.py [--episodes 64] [--latency 0.05] [--turns 5] [--family qwen3]

Target: the episodes finish within 1.25x of (model calls per episode) x latency (issue 13 measures
256 episodes: `--episodes 256`). Exit status 1 when missed; the last line is the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from rollout_common import SteppedEnv, chat_and_parser, row

from t3rl_core.config import RolloutConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.rollout.episode import EpisodeResult, run_episode

TARGET_RATIO = 1.25


async def episodes(count: int, turns: int, latency: float, family: str) -> tuple[float, list[EpisodeResult]]:
    chat, parser = chat_and_parser(family)
    engine = ReferenceEngine(ReferenceEngineConfig(latency_s=latency), chat=chat)
    limits = RolloutConfig(max_num_steps=4 * turns)

    async def one() -> EpisodeResult:
        return await run_episode(
            row(turns),
            env=SteppedEnv(turns),
            engine=engine,
            chat=chat,
            parser=parser,
            sampling=SamplingParams(),
            limits=limits,
        )

    started = time.perf_counter()
    results = await asyncio.gather(*(one() for _ in range(count)))
    return time.perf_counter() - started, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--turns", type=int, default=5, help="user turns per episode (2 model calls each)")
    parser.add_argument("--family", default="qwen3")
    args = parser.parse_args()

    asyncio.run(episodes(2, 1, 0.0, args.family))  # warm-up: imports, template compilation
    alone, _ = asyncio.run(episodes(1, args.turns, args.latency, args.family))
    wall, results = asyncio.run(episodes(args.episodes, args.turns, args.latency, args.family))
    calls = results[0].num_model_calls
    assert all(r.status == "completed" and r.num_model_calls == calls for r in results)
    ideal = calls * args.latency
    ratio = wall / ideal
    print(f"{calls} model calls per episode at {args.latency * 1000:.0f} ms: ideal {ideal:.3f} s")
    print(f"1 episode alone: {alone:.3f} s ({alone / ideal:.2f}x ideal)")
    print(f"{args.episodes} concurrent episodes: {wall:.3f} s (target <= {TARGET_RATIO}x ideal)")
    print("PASS" if ratio <= TARGET_RATIO else "FAIL")
    print(f"ratio wall / ideal: {ratio:.2f}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
