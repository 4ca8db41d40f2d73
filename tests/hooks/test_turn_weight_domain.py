"""λ (`algorithm.turn_outcome_weight`, the runtime's `turn_credit.outcome_weight`) has a declared domain,
[0, 2**24], and every value of it gives finite advantages whatever the rewards: unbounded, λ=1e308 was
accepted and made each rewarded turn's advantages infinite (float32 of 1e308 · Â^O). The KL-in-reward
GRPO's β (`algorithm.kl_in_reward.coef`) likewise: β=1e308 times a response's KL sum was -inf, and its
group's advantages NaN."""

from __future__ import annotations

import math
import sys
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
from annotated_types import Le
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from t3rl_core.config import KlInRewardConfig
from t3rl_core.credit import OUTCOME_WEIGHT_MAX, TurnCreditConfig
from t3rl_core.fields import FLOAT32_TINY
from t3rl_core.hooks.advantage import turn_level_rewards
from t3rl_core.rewards.base import REWARD_LIMIT, REWARD_SCALE_MAX
from tests.support.refusals import errors, fixed
from tests.support.slime_sample import Sample

if TYPE_CHECKING:
    import torch


# torch: bound by tests/hooks/conftest.py when the tests run, not imported at collection.
pytestmark = pytest.mark.usefixtures("torch_in_module")


KEY = "stages.train.curriculum.algorithm.turn_outcome_weight"
# The extremes of the domain, and the values between that a float can hold.
EXTREMES = [0.0, FLOAT32_TINY, 1e-12, 1.0, 1e3, OUTCOME_WEIGHT_MAX / 2, OUTCOME_WEIGHT_MAX]
# Rewards a world or a reward function can give: finite, of any size.
REWARD = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, 1e308, -1e308, 1.7e308, 5e-324, 2.0**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
)


@pytest.mark.parametrize("weight", [1e308, 2.0**25, 1e30])
def test_a_weight_past_the_domain_is_refused_at_its_key_with_a_fix_that_validates(weight: float) -> None:
    line = ["+experiment=stage1_bfcl", f"+{KEY}={weight!r}"]
    refused = errors(line)
    assert [p.key for p in refused] == [KEY], refused
    assert "16777216" in refused[0].message or "2**24" in refused[0].message
    assert errors(fixed(line, refused[0])) == []


@pytest.mark.parametrize("weight", [0.0, 1.0, OUTCOME_WEIGHT_MAX])
def test_the_domains_extremes_validate(weight: float) -> None:
    assert errors(["+experiment=stage1_bfcl", f"+{KEY}={weight!r}"]) == []


def test_the_runtime_section_refuses_what_the_schema_refuses() -> None:
    assert TurnCreditConfig(outcome_weight=OUTCOME_WEIGHT_MAX).outcome_weight == OUTCOME_WEIGHT_MAX
    with pytest.raises(ValidationError, match="outcome_weight"):
        TurnCreditConfig(outcome_weight=1e308)


def _batch(outcomes: list[float], turns: list[list[float | None]]) -> list[Sample]:
    return [
        Sample(
            index=i,
            reward=reward,
            response_length=6,
            metadata={"turn_credit": {"rewards": rewards, "spans": [[0, 3], [3, 6]][: len(rewards)]}},
        )
        for i, (reward, rewards) in enumerate(zip(outcomes, turns, strict=True))
    ]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    weight=st.sampled_from(EXTREMES) | st.floats(0.0, OUTCOME_WEIGHT_MAX),
    group=st.integers(2, 5),
    data=st.data(),
)
def test_every_weight_of_the_domain_gives_finite_advantages(weight: float, group: int, data) -> None:
    outcomes = data.draw(st.lists(REWARD, min_size=group, max_size=group))
    turn = st.one_of(st.none(), REWARD)
    turns = data.draw(st.lists(st.lists(turn, min_size=1, max_size=2), min_size=group, max_size=group))
    args = SimpleNamespace(n_samples_per_prompt=group, t3rl={"turn_credit": {"outcome_weight": weight}})
    _, advantages = turn_level_rewards(args, _batch(outcomes, turns))
    for values in advantages:
        assert values.dtype == torch.float32
        assert all(math.isfinite(v) for v in values.tolist()), (weight, outcomes, turns, values)


def test_the_largest_weight_with_the_largest_z_scores_stays_finite_in_float32() -> None:
    # A group of 1024 (n_samples_per_prompt's bound) with one outlier: its outcome z-score is the largest
    # a group has, (n - 1) / sqrt(n) ≈ 32, and so is its turn's.
    n = 1024
    outcomes = [1e308] + [-1e308] * (n - 1)
    args = SimpleNamespace(
        n_samples_per_prompt=n, t3rl={"turn_credit": {"outcome_weight": OUTCOME_WEIGHT_MAX}}
    )
    _, advantages = turn_level_rewards(args, _batch(outcomes, [[o] for o in outcomes]))
    top = float(advantages[0][0])
    assert math.isfinite(top) and top == pytest.approx(
        (n - 1) / math.sqrt(n) * (1 + OUTCOME_WEIGHT_MAX), rel=1e-3
    )


# ------------------------------------------------------------------------ β of the KL in the reward

KL_KEY = "stages.train.curriculum.algorithm.kl_in_reward.coef"


def _largest(model: type[BaseModel], name: str) -> list[float]:
    """The largest value field `name`'s declared domain accepts (the largest float when unbounded)."""
    bounds = [item.le for item in model.model_fields[name].metadata if isinstance(item, Le)]
    return [float(min(bounds, default=sys.float_info.max))]


@pytest.mark.parametrize("coef", [1e308, 2.0**25])
def test_a_kl_coefficient_past_its_domain_is_refused_at_its_key(coef: float) -> None:
    line = ["+experiment=toolrl_grpo", f"{KL_KEY}={coef!r}"]
    refused = errors(line)
    assert [p.key for p in refused] == [KL_KEY], refused
    assert errors(fixed(line, refused[0])) == []


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    coef=st.sampled_from([FLOAT32_TINY, 1e-3, 1.0, REWARD_SCALE_MAX, *_largest(KlInRewardConfig, "coef")]),
    kind=st.sampled_from(["kl", "abs", "mse"]),
    data=st.data(),
)
def test_every_kl_coefficient_of_the_domain_gives_finite_advantages(coef: float, kind: str, data) -> None:
    from t3rl_core.hooks.advantage import Topology, kl_in_reward_grpo

    group, length = 3, 4
    rewards = data.draw(
        st.lists(st.sampled_from([0.0, 1.0, -REWARD_LIMIT, REWARD_LIMIT]), min_size=group, max_size=group)
    )
    log_prob = st.floats(-100.0, 0.0)
    policy = [data.draw(st.lists(log_prob, min_size=length, max_size=length)) for _ in range(group)]
    reference = [data.draw(st.lists(log_prob, min_size=length, max_size=length)) for _ in range(group)]
    rollout = {
        "partition": list(range(group)),
        "raw_reward": rewards,
        "log_probs": [torch.tensor(lp) for lp in policy],
        "ref_log_probs": [torch.tensor(lp) for lp in reference],
        "loss_masks": [torch.ones(length, dtype=torch.int) for _ in range(group)],
        "response_lengths": [length] * group,
    }
    args = SimpleNamespace(
        n_samples_per_prompt=group, kl_coef=coef, t3rl={"kl_in_reward": {"coef": coef, "type": kind}}
    )
    kl_in_reward_grpo(args, rollout, topology=Topology)
    for advantage in rollout["advantages"]:
        assert all(math.isfinite(v) for v in advantage.tolist()), (coef, kind, rewards, advantage)


# --------------------------------------------------------- the regularisers beside the policy gradient


@pytest.mark.parametrize("key", ["kl_loss_coef", "entropy_coef"])
@pytest.mark.parametrize("coef", [1e308, 2.0**25])
def test_a_regulariser_weight_past_its_domain_is_refused_at_its_key(key: str, coef: float) -> None:
    """1e308 validated: float32 holds it as inf, and the trainer's loss was inf or NaN at its first step."""
    full = f"stages.train.curriculum.algorithm.{key}"
    line = ["+experiment=stage1_bfcl", f"{full}={coef!r}"]
    refused = errors(line)
    assert [p.key for p in refused] == [full], refused
    assert errors(fixed(line, refused[0])) == []


@pytest.mark.parametrize("key", ["kl_loss_coef", "entropy_coef"])
def test_a_regulariser_weight_at_its_domains_end_validates(key: str) -> None:
    line = ["+experiment=stage1_bfcl", f"stages.train.curriculum.algorithm.{key}={2.0**24!r}"]
    assert [p for p in errors(line) if p.key.endswith(key)] == []
