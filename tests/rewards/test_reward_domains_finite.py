"""Every value a reward's config declares gives rewards slime can train on: finite, and within
REWARD_LIMIT, so that float32 (slime's reward tensor) holds the group's differences. The extremes of
each numeric field are read from its declared domain (its Ge/Le bounds; an unbounded float's extremes
are ±1.8e308, what it then accepted): ToolRL's ranges were any finite number (max - min of ±1e308 is inf),
tau2's weights and α any finite number >= 0 (two weights of 1e308 sum to inf: the partial score inf / inf
is NaN). And a reward function's value past REWARD_LIMIT is the reward's failure (1e39 is finite as a
Python float and inf in float32)."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest
from annotated_types import Ge, Gt, Le, Lt
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from t3rl_core.fields import FLOAT32_TINY
from t3rl_core.rewards.base import (
    REWARD_LIMIT,
    InvalidReward,
    RewardInput,
    RewardResult,
    checked,
    within_bounds,
)
from t3rl_core.rewards.tau2 import (
    Normalization,
    ScoredSample,
    Tau2RewardConfig,
    Tau2ShapedReward,
)
from t3rl_core.rewards.toolrl import ToolRLReward, ToolRLRewardConfig
from tests.support.refusals import errors, fixed

BIGGEST = sys.float_info.max


def extremes(model: type[BaseModel], name: str) -> list[float]:
    """The ends of field `name`'s declared domain, and the values between a float can hold (0, the
    smallest normal float32)."""
    low, high = -BIGGEST, BIGGEST
    for item in model.model_fields[name].metadata:
        if isinstance(item, Ge | Gt):
            low = float(item.ge if isinstance(item, Ge) else item.gt)
        if isinstance(item, Le | Lt):
            high = float(item.le if isinstance(item, Le) else item.lt)
    inside = [v for v in (0.0, FLOAT32_TINY, -FLOAT32_TINY, 1.0) if low <= v <= high]
    return [low, high, *inside]


def trainable(value: float) -> bool:
    return math.isfinite(value) and abs(value) <= REWARD_LIMIT and math.isfinite(float(np.float32(value)))


# ----------------------------------------------------------------------------------------------- ToolRL

GT = '<tool_call>\n{"name": "f", "parameters": {"a": 1, "b": 2}}\n</tool_call>'
RESPONSES = [
    "<think>" + "w " * 600 + "</think>\n" + GT,  # format and calls right, long thinking
    '<think>x</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1, "b": 3}}\n</tool_call>',  # partly
    "no format at all",
    "<think>x</think>\n<tool_call>\nnot json\n</tool_call>",
]


def _toolrl(config: ToolRLRewardConfig, response: str, step: int) -> float:
    reward = ToolRLReward(config)
    inp = RewardInput(outcome={"response": response, "ground_truth": GT}, step=step)
    return within_bounds(reward, inp, reward(inp)).value


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    data=st.data(),
    flags=st.fixed_dictionaries(
        {
            "max1_step30_max3": st.booleans(),
            "schedule_reward": st.booleans(),
            "with_length": st.booleans(),
            "refined": st.booleans(),
        }
    ),
    response=st.sampled_from(RESPONSES),
    step=st.sampled_from([0, 29, 30, 149, 10**6]),
)
def test_toolrl_rewards_are_trainable_at_every_extreme_of_its_ranges(data, flags, response, step) -> None:
    values: dict[str, Any] = {}
    for part in ("format", "correctness", "length"):
        high, low = (
            data.draw(st.sampled_from(extremes(ToolRLRewardConfig, f"{part}_{end}")))
            for end in ("max", "min")
        )
        values[f"{part}_max"], values[f"{part}_min"] = max(high, low), min(high, low)
    config = ToolRLRewardConfig(**values, **flags)
    value = _toolrl(config, response, step)
    assert trainable(value), (values, flags, value)


@pytest.mark.parametrize("key", ["correctness_max", "format_max", "length_max"])
def test_a_toolrl_range_past_its_domain_is_refused_at_its_key(key: str) -> None:
    line = ["+experiment=toolrl_grpo", f"reward.{key}=1e308"]
    refused = errors(line)
    assert [p.key for p in refused] == [f"reward.{key}"], refused
    assert errors(fixed(line, refused[0])) == []


# ------------------------------------------------------------------------------------------------- tau2

_WEIGHTS = ("action", "communicate", "env_assertion", "db")


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data(), domain=st.sampled_from(["retail", "airline", "telecom"]))
def test_tau2_rewards_are_trainable_at_every_extreme_of_its_weights(data, domain: str) -> None:
    from t3rl_core.rewards.tau2 import CurriculumWeighting, PartialWeights

    def draw(model: type[BaseModel], name: str) -> float:
        return data.draw(st.sampled_from(extremes(model, name)))

    weights = {name: draw(PartialWeights, name) for name in _WEIGHTS}
    multiplier = draw(Tau2RewardConfig, "alpha")  # a multiplier's domain is α's
    config = Tau2RewardConfig(
        alpha=draw(Tau2RewardConfig, "alpha"),
        alpha_multipliers={domain: multiplier},
        partial_weights=weights,
        domain_partial_weights={domain: weights},
        curriculum={
            "min_attempts": 1,
            "solved_weight": draw(CurriculumWeighting, "solved_weight"),
            "hard_weight": draw(CurriculumWeighting, "hard_weight"),
        },
    )
    reward = Tau2ShapedReward(config)
    samples = []
    for task_reward, component in [(1.0, 1.0), (0.0, 0.5), (0.0, 0.0), (1.0, 0.25)]:
        outcome = {
            "domain": domain,
            "task_reward": task_reward,
            "partial_components": dict.fromkeys(_WEIGHTS, component),
        }
        inp = RewardInput(outcome=outcome)
        result = within_bounds(reward, inp, reward(inp))
        assert trainable(result.value), (config, result)
        samples.append(ScoredSample("t", task_reward, result.value, result.metrics["partial_score"]))
    for estimator, normalise, std in [
        ("grpo", True, True),
        ("reinforce_plus_plus_baseline", True, False),
        ("ppo", False, False),
    ]:
        for _ in range(2):  # the second batch is weighted by the curriculum's statistics of the first
            out = reward.post_process(samples, Normalization(estimator, normalise, std, 4))
            assert all(trainable(r) for r in out.rewards), (config, out)


def test_a_tau2_weight_past_its_domain_is_refused_at_its_key() -> None:
    line = ["+experiment=tau2_pipeline", "reward.partial_weights.action=1e308"]
    refused = errors(line)
    assert [p.key for p in refused] == ["reward.partial_weights.action"], refused
    assert errors(fixed(line, refused[0])) == []


# ---------------------------------------------------------------------------------------- any reward


@pytest.mark.parametrize("value", [1e38, -1e39, 1e300, np.float64(3.5e38), 10**40])
def test_a_reward_past_what_float32_holds_is_the_rewards_failure(value: Any) -> None:
    with pytest.raises(InvalidReward, match=r"reward plugin\.score gave .* float32"):
        checked(RewardResult(value), "reward plugin.score")


@pytest.mark.parametrize("value", [REWARD_LIMIT, -REWARD_LIMIT, 1e30, 5e-324, 0])
def test_a_reward_within_the_limit_is_taken(value: float) -> None:
    assert checked(RewardResult(value)).value == float(value)
