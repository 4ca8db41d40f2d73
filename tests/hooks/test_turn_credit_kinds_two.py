"""Turn-level credit and the numbers a world hands over, by kind.

- A number past a float's range (an int such as 10**400, which a world's outcome, a reward function or
  an environment server's JSON integer can hold) is a value's problem: every finite-number check of t3rl
  (turn rewards, verdict fields, a reward's value, OpenEnv's step reward, a verifiers rubric function)
  asks t3rl_core.finite, whose math.isfinite raised OverflowError on it. The turn-fields and verdict
  checks run outside the episode's own try, so such a turn reward ended the whole rollout batch (slime's
  generate raised) instead of failing its episode as the world's; an int too long to print (a message
  holding its repr) raised ValueError in the message itself.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.credit import turn_fields_problem
from t3rl_core.finite import finite_real, shown
from t3rl_core.rewards.base import InvalidReward, RewardResult, checked
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
    assert (turns is None) == (value is None or _finite(value)), turns
    verdict = verdict_fields_problem({"accuracy": value})
    assert (verdict is None) == (value is None or (_finite(value) and 0 <= value <= 1)), verdict
    try:
        result = checked(RewardResult(value))
    except InvalidReward:
        assert not _finite(value)
    else:
        assert _finite(value) and isinstance(result.value, float) and math.isfinite(result.value)


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
