"""A world's own scores (`outcome["reward"]`, `outcome["metrics"]`, what the env_score reward trains on)
are finite real numbers, or the episode is the world's failure (`InvalidOutcome`), never trained on: the
reward read them with float(), so a text '  3 ' trained as 3.0, a bool as 1.0, and a sum of finite step
rewards that overflowed (1e308 + 1e308) failed as the reward's own bug."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.credit import turn_fields_problem
from t3rl_core.finite import NotFinite, outside_real
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import METADATA_KEY
from t3rl_core.rewards.base import REWARD_LIMIT
from t3rl_core.rewards.env_score import EnvScoreReward, EnvScoreRewardConfig
from t3rl_core.rollout.verdict_fields import score_fields_problem
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.rollout.fakes import ToyEnv
from tests.support.slime_sample import Sample

FINITE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-(2**1000), 2**1000),
    st.sampled_from([0.0, -0.0, 5e-324, 1.7976931348623157e308, -1.7976931348623157e308]),
)
# What a world or a hub environment hands over that is no finite real number.
NOT_FINITE = st.one_of(
    st.sampled_from(
        [math.nan, math.inf, -math.inf, 10**400, -(10**400), np.float64("nan"), np.float32("inf")]
    ),
    st.sampled_from(["nan", "inf", "1e999", "  3 ", "0.5", "", None, [1.0], {"v": 1.0}, b"1", 1j]),
    st.text(max_size=8),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=FINITE)
def test_a_finite_real_is_taken_as_its_float(value: Any) -> None:
    assert outside_real(value, "the source") == float(value)
    assert score_fields_problem({"reward": value, "metrics": {"m": value, "check": True}}) is None


@settings(max_examples=200, deadline=None, derandomize=True)
@given(value=NOT_FINITE)
def test_anything_else_is_refused_naming_its_source(value: Any) -> None:
    with pytest.raises(NotFinite, match=r"^the source"):
        outside_real(value, "the source")
    assert "outcome reward" in (score_fields_problem({"reward": value}) or "")
    assert "outcome metric 'm'" in (score_fields_problem({"metrics": {"m": value}}) or "")


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_a_bool_is_a_metric_but_never_a_reward(value: Any) -> None:
    assert "bool" in (score_fields_problem({"reward": value}) or "")
    assert score_fields_problem({"reward": 1.0, "metrics": {"solved": value}}) is None


def test_metrics_that_are_no_mapping_of_names_are_refused() -> None:
    assert "map names" in (score_fields_problem({"metrics": [1.0]}) or "")
    assert "named by texts" in (score_fields_problem({"metrics": {3: 1.0}}) or "")


def _world(reward: Any) -> type[ToyEnv]:
    class Scored(ToyEnv):
        def outcome(self) -> dict[str, Any]:
            return {**super().outcome(), "reward": reward, "metrics": {"steps": 2.0}}

    return Scored


@pytest.mark.parametrize(
    "reward",
    [1e308 + 1e308, math.nan, "  3 ", "1e999", True, None],
    ids=["overflowed_sum", "nan", "text", "text_inf", "bool", "none"],
)
def test_a_worlds_score_that_is_no_finite_number_is_the_worlds_failure(
    reward: Any, monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    use_runner(monkeypatch, qwen_chat, env=_world(reward), reward=EnvScoreReward(EnvScoreRewardConfig()))
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    failure = sample.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("env", "InvalidOutcome"), failure
    assert "outcome reward" in failure["message"]
    assert sample.remove_sample and sample.status is Sample.Status.FAILED
    assert sample.reward == 0.0 and "reward" not in sample.metadata["outcome"]


@pytest.mark.parametrize("reward", [0.5, -3, np.float32(0.25), REWARD_LIMIT])
def test_a_worlds_finite_score_is_trained_on(
    reward: Any, monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    use_runner(monkeypatch, qwen_chat, env=_world(reward), reward=EnvScoreReward(EnvScoreRewardConfig()))
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    assert METADATA_KEY not in sample.metadata and sample.reward == float(reward)


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_turn_reward_is_the_worlds_bad_turn_fields(value: bool) -> None:
    """A turn's reward read True as 1.0: a check returned where the turn's score was meant, as a reward's
    value (rewards.base.checked) refuses it."""
    problem = turn_fields_problem({"turn_rewards": [value, 1.0], "turn_steps": [1, 1]})
    assert problem is not None and "finite numbers or None" in problem
    assert turn_fields_problem({"turn_rewards": [float(value), None], "turn_steps": [1, 0]}) is None


def test_a_worlds_finite_score_past_what_slime_trains_on_is_the_rewards_failure(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """1.8e308 is a finite score, the world's to give; trained on it is inf in slime's float32 rewards."""
    reward = EnvScoreReward(EnvScoreRewardConfig())
    use_runner(monkeypatch, qwen_chat, env=_world(1.7976931348623157e308), reward=reward)
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    failure = sample.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("reward", "InvalidReward"), failure
    assert "float32" in failure["message"] and sample.remove_sample and sample.reward == 0.0
