"""Cost of tokenizing an episode's observations at turn 1 vs turn 20 (TITO deltas).

Runs real episodes (scripted gold policy, a simple env with a fixed-size tool result in every user
turn, 20 BFCL-sized tools in the prompt) and times, inside the loop, the observation delta of each
turn's tool result. Side by side, at the same moment, it times the re-render approach (render the
whole conversation before and after the new messages, tokenize the text suffix), whose cost grows
with the history.

    .venv/bin/python benchmarks/tito_tokenization.py [--family qwen3] [--episodes 30]

Target: t3rl's delta at turn 20 costs at most 1.5x its cost at turn 1.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import defaultdict
from typing import Any

from rollout_common import TOOLS, SteppedEnv, chat_and_parser, median, row

from t3rl_core.config import RolloutConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.rollout.episode import run_episode

TARGET_RATIO = 1.5
EARLY, LATE = 1, 20  # user turns (0-based); each turn is a tool call, its result, then an answer


def result_delta(turn: int) -> int:
    """Which observation delta of an episode carries user turn `turn`'s tool result (1-based)."""
    return 2 * turn + 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", default="qwen3")
    parser.add_argument("--episodes", type=int, default=30)
    parser.add_argument(
        "--turns", type=int, default=LATE + 1, help="user turns per episode (2 model calls each)"
    )
    args = parser.parse_args()

    chat, action_parser = chat_and_parser(args.family)
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    delta_s: dict[int, list[float]] = defaultdict(list)
    rerender_s: dict[int, list[float]] = defaultdict(list)
    episode: dict[str, Any] = {}
    original = chat.turn_end_ids_async  # what the episode loop calls (its encode may leave the loop)

    async def timed(last_token, new_messages=(), *, add_generation_prompt=False):
        call = episode["calls"] = episode.get("calls", 0) + 1
        started = time.perf_counter()
        ids = await original(last_token, new_messages, add_generation_prompt=add_generation_prompt)
        delta_s[call].append(time.perf_counter() - started)
        if new_messages:  # the same delta by re-rendering the whole history, at this same moment
            history = episode["messages"]
            started = time.perf_counter()
            before = chat.render(history[: len(history) - len(new_messages)], TOOLS)
            after = chat.render(history, TOOLS, add_generation_prompt=add_generation_prompt)
            chat.encode(after[len(before) :])
            rerender_s[call].append(time.perf_counter() - started)
        return ids

    chat.turn_end_ids_async = timed  # type: ignore[method-assign]
    for _ in range(args.episodes):
        episode.clear()
        task = row(args.turns)
        env = SteppedEnv(args.turns)
        original_generate = engine.generate

        async def generate(input_ids, sampling, context=None, _generate=original_generate):
            episode["messages"] = context.messages
            return await _generate(input_ids, sampling, context)

        engine.generate = generate  # type: ignore[method-assign]
        result = asyncio.run(
            run_episode(
                task,
                env=env,
                engine=engine,
                chat=chat,
                parser=action_parser,
                sampling=SamplingParams(),
                limits=RolloutConfig(max_num_steps=4 * args.turns),
            )
        )
        engine.generate = original_generate  # type: ignore[method-assign]
        assert result.status == "completed", result.error
    history_tokens = len(result.tokens)

    early, late = median(delta_s[result_delta(EARLY)]), median(delta_s[result_delta(LATE)])
    early_rr, late_rr = median(rerender_s[result_delta(EARLY)]), median(rerender_s[result_delta(LATE)])
    ratio, ratio_rr = late / early, late_rr / early_rr
    print(f"family {args.family}: {args.episodes} episodes, final trajectory {history_tokens} tokens")
    print(f"observation delta, turn {EARLY}: {early * 1e6:8.1f} us   turn {LATE}: {late * 1e6:8.1f} us")
    print(
        f"re-render approach, turn {EARLY}: {early_rr * 1e6:8.1f} us   turn {LATE}: {late_rr * 1e6:8.1f} us"
    )
    print(
        f"ratio turn {LATE}/turn {EARLY}: t3rl {ratio:.2f} (target <= {TARGET_RATIO}), "
        f"re-render {ratio_rr:.2f}"
    )
    print("PASS" if ratio <= TARGET_RATIO else "FAIL")


if __name__ == "__main__":
    main()
