"""Progress and binary rewards on hand-computed outcomes, and on a real episode through the registry."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLTask
from t3rl_core.registries import REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.rewards.progress import BinaryReward, BinaryRewardConfig, ProgressReward, ProgressRewardConfig
from t3rl_core.types import AnswerAction, InvalidAction


def _outcome(correct, total, accuracy, interactions, format_errors):
    return {
        "turns_correct": correct,
        "turns_total": total,
        "accuracy": accuracy,
        "interactions": interactions,
        "format_errors": format_errors,
    }


@pytest.mark.parametrize(
    ("outcome", "progress", "accuracy", "format_reward"),
    [
        (_outcome(3, 4, 0.0, 8, 2), 0.75, 0.0, 0.75),
        (_outcome(5, 5, 1.0, 10, 0), 1.0, 1.0, 1.0),
        (_outcome(0, 4, 0.0, 5, 5), 0.0, 0.0, 0.0),
        (_outcome(0, 4, 0.0, 0, 0), 0.0, 0.0, 0.0),  # no model action at all
        (_outcome(1, 3, 0.0, 4, 1), 1 / 3, 0.0, 0.75),
    ],
)
def test_rewards_on_hand_computed_outcomes(outcome, progress, accuracy, format_reward):
    inp = RewardInput(outcome=outcome)
    expected_metrics = {
        "progress": progress,
        "accuracy": accuracy,
        "format_reward": format_reward,
        "hints": 0.0,
    }
    by_progress = ProgressReward(ProgressRewardConfig())(inp)
    by_accuracy = BinaryReward(BinaryRewardConfig())(inp)
    assert by_progress.value == pytest.approx(progress)
    assert by_accuracy.value == accuracy
    assert by_progress.metrics == pytest.approx(expected_metrics)
    assert by_accuracy.metrics == pytest.approx(expected_metrics)


def test_rewards_of_a_real_episode_built_through_the_registry(row_by_id):
    row = row_by_id["multi_turn_base_0"]  # 4 turns

    async def episode():
        env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(), "train")
        await env.reset()
        await env.step(InvalidAction(error="bad", text=""))  # 1 format error
        for _ in range(2):  # turns 0 and 1 solved
            await env.step(env.oracle())
            await env.step(env.oracle())
        await env.step(AnswerAction(text="no"))  # turn 2 answered without calls: wrong
        return env.outcome()  # turn 3 never reached

    outcome = asyncio.run(episode())
    progress = REWARDS.build(REWARDS.validate({"name": "progress"}))
    binary = REWARDS.build(REWARDS.validate({"name": "binary"}))
    result = progress(RewardInput(outcome=outcome))
    assert result.value == 0.5  # 2 correct of 4 turns
    assert result.metrics["format_reward"] == pytest.approx(5 / 6)  # 6 interactions, 1 format error
    assert binary(RewardInput(outcome=outcome)).value == 0.0
