"""Turn-level credit and the numbers a world hands over, by kind.

- A number past a float's range (an int such as 10**400, which a world's outcome, a reward function or
  an environment server's JSON integer can hold) is a value's problem: every finite-number check of t3rl
  (turn rewards, verdict fields, a reward's value, OpenEnv's step reward, a verifiers rubric function)
  asks t3rl_core.finite, whose math.isfinite raised OverflowError on it. The turn-fields and verdict
  checks run outside the episode's own try, so such a turn reward ended the whole rollout batch (slime's
  generate raised) instead of failing its episode as the world's; an int too long to print (a message
  holding its repr) raised ValueError in the message itself.
- Advantages of finite rewards are finite and are the formula's, whatever the rewards' size: the group
  z-score (MT-GRPO's outcome and turn terms, the KL-in-reward GRPO) overflowed its sums and squares past
  about 1e154, so rewards of ±1e308 got advantages of 0 and equal rewards of 1.7e308 NaN (a NaN
  advantage makes the step's loss NaN). Checked against an exact computation in fractions.
"""

from __future__ import annotations

import asyncio
import math
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.credit import turn_fields_problem
from t3rl_core.finite import finite_real, shown
from t3rl_core.hooks.advantage import EPS, group_zscore, turn_level_rewards
from t3rl_core.rewards.base import REWARD_LIMIT, InvalidReward, RewardResult, checked
from t3rl_core.rollout.verdict_fields import verdict_fields_problem
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.hooks.test_hooks_slime_failures import _play
from tests.rollout.fakes import ToyEnv
from tests.support.slime_sample import Sample

HUGE = (10**400, -(10**400), 2**1024, 10**5000)  # past a float; the last past Python's int-to-text limit
NUMBERS = st.one_of(
    st.sampled_from(range(len(HUGE))).map(lambda i: HUGE[i]),  # (the repr of 10**5000 raises)
    st.integers(),
    st.floats(),  # NaN and the infinities included
    st.booleans(),
    st.none(),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
)


def _finite(value: Any) -> bool:
    """The oracle: a real number a float holds exactly as finite (ints by their size, not by asking)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**1023 * (2 - 2**-52)  # the largest finite float
    return isinstance(value, float) and math.isfinite(value)


@settings(max_examples=150, deadline=None)
@given(value=NUMBERS)
def test_every_finite_check_answers_for_any_value(value: Any) -> None:
    assert finite_real(value) == _finite(value)
    assert isinstance(shown(value), str) and len(shown(value)) <= 80
    turns = turn_fields_problem({"turn_rewards": [value], "turn_steps": [1]})
    # a bool is a turn's check, not its score
    assert (turns is None) == (value is None or (_finite(value) and not isinstance(value, bool))), turns
    verdict = verdict_fields_problem({"accuracy": value})
    assert (verdict is None) == (value is None or (_finite(value) and 0 <= value <= 1)), verdict
    try:
        result = checked(RewardResult(value))
    except InvalidReward:
        # a reward is a number, never a bool, and one float32 (slime's reward tensor) holds
        assert not _finite(value) or isinstance(value, bool) or abs(value) > REWARD_LIMIT
    else:
        assert _finite(value) and not isinstance(value, bool) and abs(value) <= REWARD_LIMIT
        assert isinstance(result.value, float) and math.isfinite(result.value)


@pytest.mark.parametrize("value", HUGE, ids=["1e400", "-1e400", "2**1024", "1e5000"])
def test_openenv_and_verifiers_read_a_huge_reward_as_not_a_number(value: int) -> None:
    openenv = pytest.importorskip("t3rl_core.envs.openenv.boundary")
    assert openenv._finite_number(value) is False and isinstance(openenv._show(value), str)
    verifiers = pytest.importorskip("t3rl_core.envs.verifiers.boundary")

    def rubric_function(**_: Any) -> int:
        return value

    problems: list[str] = []
    token = verifiers._PROBLEMS.set(problems)
    try:
        assert asyncio.run(verifiers._checked(rubric_function)()) == value
    finally:
        verifiers._PROBLEMS.reset(token)
    assert problems and "reward function 'rubric_function' returned" in problems[0]


class _HugeTurnReward(ToyEnv):
    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "turn_rewards": [10**400], "turn_steps": [1]}


class _HugeAccuracy(ToyEnv):
    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "accuracy": 10**5000}


@pytest.mark.parametrize(
    ("env", "error_type", "words"),
    [
        (_HugeTurnReward, "InvalidTurnFields", "turn_rewards must be finite"),
        (_HugeAccuracy, "InvalidOutcome", ""),
    ],
)
def test_a_world_reporting_a_huge_number_fails_its_own_episode(
    monkeypatch: Any, qwen_chat: Any, env: type, error_type: str, words: str
) -> None:
    use_runner(monkeypatch, qwen_chat, env=env)
    [broken] = _play(slime_args(max_failure_rate=0.5), [toy_sample(0, group=0)])
    assert broken.status is Sample.Status.FAILED and broken.remove_sample
    failure = broken.metadata["t3rl_failure"]
    assert (failure["kind"], failure["error_type"]) == ("env", error_type)
    assert words in failure["message"]


def _exact_zscore(values: list[float]) -> list[float]:
    """(v - mean) / (std + eps) with the unbiased std, in exact fractions (a group of one: v / (1 + eps))."""
    if len(values) == 1:
        return [float(Fraction(values[0]) / (1 + Fraction(EPS)))]
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / len(exact)
    var = sum((v - mean) ** 2 for v in exact) / (len(exact) - 1)
    big = max(abs(v) for v in exact) or Fraction(1)  # the std in a float's range, then back
    std = big * Fraction(math.sqrt(float(var / big**2)))
    return [float((v - mean) / (std + Fraction(EPS))) for v in exact]


def _conditioning(values: list[float]) -> float:
    """How much the scores' magnitude exceeds their spread (the digits a float mean loses)."""
    exact = [Fraction(v) for v in values]
    mean = sum(exact) / len(exact)
    spread = max(abs(v - mean) for v in exact)
    return float(max(abs(v) for v in exact) / spread) if spread else 1.0


FINITE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1.7e308, -1.7e308, 1e200, -1e200, 2.0**500, 0.0, 1.0]),
)


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.lists(FINITE, min_size=3, max_size=3), min_size=1, max_size=3))
def test_the_group_zscore_of_any_finite_scores_is_finite_and_exact(groups: list[list[float]]) -> None:
    torch = pytest.importorskip("torch")
    flat = [v for group in groups for v in group]
    present = torch.ones(len(flat), dtype=torch.bool)
    got = group_zscore(torch.tensor(flat, dtype=torch.float64), present, 3).tolist()
    assert all(math.isfinite(z) for z in got), (flat, got)
    for index, group in enumerate(groups):
        # Floats round each sum: near-equal large scores lose digits to their mean as any float code does.
        allowed = 1e-9 + 128 * 2.0**-52 * _conditioning(group)  # a z-score of 3 is at most 2 in size
        assert got[3 * index : 3 * index + 3] == pytest.approx(_exact_zscore(group), abs=allowed)


@pytest.mark.parametrize(
    "score", [3002399751580331.0, 1e10 + 0.1, 0.1, -7e15 / 3, 2.0**53 + 2, 1.7e308, 5e-324]
)
@pytest.mark.parametrize("size", [2, 3, 5, 7])
def test_equal_scores_have_a_zscore_of_exactly_zero(score: float, size: int) -> None:
    """A sum past 2**53 rounds: three equal scores of 3002399751580331.0 had z-scores of 0.82 (their
    mean one ulp off, the std of that ulp far below eps's reach), found by the property above."""
    torch = pytest.importorskip("torch")
    got = group_zscore(
        torch.full((size,), score, dtype=torch.float64), torch.ones(size, dtype=torch.bool), size
    )
    assert got.tolist() == [0.0] * size


@pytest.mark.parametrize(
    ("outcomes", "turns"),
    [([1e308, -1e308], [0.0, 1.0]), ([1.7e308, 1.7e308], [0.0, 1.0]), ([0.0, 1.0], [1e200, -1e200])],
)
def test_turn_level_advantages_of_huge_finite_rewards(outcomes: list[float], turns: list[float]) -> None:
    pytest.importorskip("torch")
    samples = [
        Sample(
            index=i,
            reward=r,
            response_length=3,
            metadata={"turn_credit": {"rewards": [t], "spans": [[0, 3]]}},
        )
        for i, (r, t) in enumerate(zip(outcomes, turns, strict=True))
    ]
    args = SimpleNamespace(n_samples_per_prompt=2, t3rl={"turn_credit": {"outcome_weight": 1.0}})
    _, rewards = turn_level_rewards(args, samples)
    expected = [o + t for o, t in zip(_exact_zscore(outcomes), _exact_zscore(turns), strict=True)]
    for values, value in zip(rewards, expected, strict=True):
        assert values.tolist() == pytest.approx([value] * 3, abs=1e-5)
