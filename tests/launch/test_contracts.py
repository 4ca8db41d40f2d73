"""The declared env ↔ reward contract is true of the code: envs return the fields they declare, rewards
run on exactly the fields they declare, and the launcher's memory estimate keeps its known anchors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from run_configs import group

from launch.config.model_size import param_counts
from launch.config.schema import MegatronArch
from t3rl_core.finite import MissingScore
from t3rl_core.registries import ENVS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.types import AnswerAction

# A value of the right type for every field some reward declares it reads.
SAMPLE_OUTCOME: dict[str, Any] = {
    "turns_total": 2,
    "turns_correct": 1,
    "accuracy": 0.0,
    "interactions": 3,
    "format_errors": 1,
    "response": "<answer>\n\\boxed{4}\n</answer>",
    "ground_truth": "4",
    "domain": "telecom",
    "task_reward": 1.0,
    "partial_components": {"action": 1.0},
    "tool_calls": 2,
    "reward": 0.5,
    "metrics": {"correct_answer": 1.0},
}


@pytest.mark.parametrize("name", REWARDS.names())
def test_reward_runs_on_exactly_its_declared_fields(name: str) -> None:
    config = REWARDS.validate({"name": name})
    needs = type(config).NEEDS_OUTCOME
    assert needs, f"reward {name} declares no outcome fields"
    reward = REWARDS.build(config)
    result = reward(RewardInput(outcome={key: SAMPLE_OUTCOME[key] for key in needs}))
    assert isinstance(result.value, float)


@pytest.mark.parametrize("name", REWARDS.names())
def test_a_declared_field_is_really_read(name: str) -> None:
    """Dropping any declared field changes the result or fails: the declaration is not padded."""
    config = REWARDS.validate({"name": name})
    needs = sorted(type(config).NEEDS_OUTCOME)
    full = REWARDS.build(config)(RewardInput(outcome={k: SAMPLE_OUTCOME[k] for k in needs}))
    for dropped in needs:
        outcome = {k: SAMPLE_OUTCOME[k] for k in needs if k != dropped}
        try:
            partial = REWARDS.build(config)(RewardInput(outcome=outcome))
        except (KeyError, TypeError, MissingScore):  # MissingScore: a world's score read strictly
            continue
        assert (partial.value, partial.metrics) != (full.value, full.metrics), f"{name} ignores {dropped}"


def test_toolrl_env_returns_its_declared_outcome_fields() -> None:
    config = ENVS.validate({"name": "toolrl_single_turn", "data": {"splits": {"t": "t.parquet"}}})
    env = ENVS.build(config)({"prompt": [], "label": "<response> hi </response>"}, "train")
    asyncio.run(env.step(AnswerAction(text="<response> hi </response>")))
    assert set(env.outcome()) == type(config).OUTCOME_FIELDS


def test_every_shipped_env_declares_its_outcome() -> None:
    for name in ENVS.names():
        assert ENVS.config_class(name).OUTCOME_FIELDS, f"env {name} declares no outcome fields"


def test_parameter_counts_match_the_published_sizes() -> None:
    """The memory estimate starts from parameter counts: Qwen3-8B ~8.2B, DeepSeek-V3 ~671B."""
    qwen = param_counts(MegatronArch.model_validate(group("model/qwen3_8b")["architecture"]))
    deepseek = param_counts(MegatronArch.model_validate(group("model/deepseek_v3")["architecture"]))
    assert 8.0e9 < qwen.total < 8.4e9
    assert 660e9 < deepseek.total < 690e9
