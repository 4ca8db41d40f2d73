"""The reference engine's injected faults are drawn per sample: the same seeds inject the same faults,
and the samples and repeats of one task (each its own sampling seed in the eval) draw their own, so
pass@k and the variance across repeats measure something when faults are on."""

from __future__ import annotations

import asyncio

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import run_episode
from tests.rollout.fakes import TOOLS, ToyEnv, task

QUESTIONS = tuple(f"Add {i} and {i + 1}." for i in range(6))


def injected(chat: ChatFormat, sample_seed: int | None) -> tuple[list[int], dict[str, int]]:
    """The tokens and the faults of one episode of the same task, faults at 0.5."""
    engine = ReferenceEngine(ReferenceEngineConfig(faults={"malformed_json": 0.5}, seed=3), chat=chat)
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=chat.family.tool_call_parser), TOOLS)
    env = ToyEnv(QUESTIONS)
    result = asyncio.run(
        run_episode(
            task(QUESTIONS),
            env=env,
            engine=engine,
            chat=chat,
            parser=parser,
            sampling=SamplingParams(seed=sample_seed),
            limits=RolloutConfig(max_num_steps=12),
        )
    )
    return result.tokens, dict(engine.injected)


def test_the_same_sample_seed_injects_the_same_faults(qwen_chat: ChatFormat) -> None:
    assert injected(qwen_chat, 7) == injected(qwen_chat, 7)
    assert injected(qwen_chat, None) == injected(qwen_chat, None)


def test_samples_of_one_task_draw_their_own_faults(qwen_chat: ChatFormat) -> None:
    draws = {str(injected(qwen_chat, seed)) for seed in range(6)}
    assert len(draws) > 1
