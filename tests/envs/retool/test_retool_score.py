"""`t3rl_core.score.retool` agrees with the env's episode path (ReToolEnv → outcome → retool_outcome)."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core import score
from t3rl_core.registries import ENVS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.types import AnswerAction

ANSWERS = [
    "So the product is <answer>\\boxed{391}</answer>",
    "<answer>The result is \\boxed{\\frac{782}{2}}.</answer>",
    "<answer>\\boxed{390}</answer>",
    "The answer is \\boxed{391}",
    "<answer>391</answer>",
    "<answer>\\boxed{391}</answer><|im_end|>trailing",
]


@pytest.mark.parametrize("text", ANSWERS)
def test_scoring_an_answer_gives_the_episode_reward(text):
    factory = ENVS.build(ENVS.validate({"name": "retool_python"}))
    reward = REWARDS.build(REWARDS.validate({"name": "retool_outcome"}))
    task = {"prompt": [{"role": "user", "content": "What is 17 times 23?"}], "label": "391"}
    env = factory(task, "eval")

    async def episode() -> dict:
        await env.reset()
        await env.step(AnswerAction(text=text))
        outcome = env.outcome()
        await factory.aclose()
        return outcome

    outcome = asyncio.run(episode())
    expected = reward(RewardInput(outcome=outcome, response=outcome["response"], label="391"))
    verdict = score.retool(outcome["response"], "391")
    assert (verdict.reward, verdict.details) == (expected.value, expected.metrics)
    assert verdict.reward == score.retool(text, "391").reward  # the env passes a plain answer through
