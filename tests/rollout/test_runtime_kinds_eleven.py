"""Runtime kinds of round eleven: a reward is a real number, never a bool, refused naming the reward
that gave it; a BaseException of a plugin's own is that component's failure, not the process's stop;
a world's result (a tool's, an observation's) nested past any reader's recursion is answered with
t3rl's limit named, and a world's message holds text."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.rewards.base import InvalidReward, RewardInput, RewardResult, checked, within_bounds
from t3rl_core.rollout.failures import components_failure
from tests.rollout.fakes import task
from tests.rollout.test_runner import toy_runner
from tests.rollout.test_runtime_kinds_ten import _WHERE, _runner

# --- A reward is a real number --------------------------------------------------------------------------


def plugin_reward(value: Any) -> Any:
    """A plugin's reward function as a plain callable, returning `value` as its reward."""

    def shaped(inp: RewardInput) -> RewardResult:
        return RewardResult(value)

    return shaped


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_reward_is_the_rewards_failure_naming_it(qwen_chat: ChatFormat, value: bool) -> None:
    """`RewardResult(True)` (a check returned where its score was meant) was read as 1.0 and trained
    on without a word. A reward is declared a real number: a bool is the reward's failure, named by
    the plugin's import path, at the one place a reward's result is accepted (`within_bounds`, which
    the runner and slime's reward hook both call)."""
    runner = toy_runner(qwen_chat, reward=plugin_reward(value))
    result, score = asyncio.run(runner.run(task(), "eval"))
    assert result.failure is not None and result.failure.label == "reward/InvalidReward"
    assert "plugin_reward.<locals>.shaped" in result.failure.message
    assert "bool" in result.failure.message and "real number" in result.failure.message
    assert score.value == 0.0


def test_a_bool_metric_is_still_a_share() -> None:
    """A metric is averaged over the batch: a bool one is the share of episodes it holds for."""
    assert checked(RewardResult(0.5, {"solved": True})).metrics == {"solved": 1.0}


_VALUES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),
    st.sampled_from([np.bool_(True), np.float32(0.5), np.int64(3), np.float64(math.nan), None, "1", [1.0]]),
)


@settings(max_examples=200, deadline=None)
@given(value=_VALUES)
def test_a_reward_is_accepted_exactly_when_it_is_a_finite_real_number_and_no_bool(value: Any) -> None:
    def real(value: Any) -> bool:
        numeric = isinstance(value, int | float | np.integer | np.floating)
        if isinstance(value, bool | np.bool_) or not numeric:
            return False
        try:
            return math.isfinite(value)
        except OverflowError:
            return False

    try:
        result = within_bounds(plugin_reward(value), RewardInput(outcome={}), RewardResult(value))
    except InvalidReward as exc:
        assert not real(value)
        assert "plugin_reward.<locals>.shaped" in str(exc)
    else:
        assert real(value) and type(result.value) is float


def test_a_refused_rewards_message_survives_a_value_nested_past_any_repr() -> None:
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(InvalidReward, match="nested too deep to print"):
        checked(RewardResult(deep))


# --- A plugin's own BaseException ------------------------------------------------------------------------


class _PluginStop(BaseException):
    """What a plugin may raise that is no Exception: its own control flow, a test framework's outcome."""


@pytest.mark.parametrize("where", list(_WHERE))
def test_a_plugins_own_base_exception_is_its_components_failure(qwen_chat: ChatFormat, where: str) -> None:
    """A BaseException of a plugin's own class went on up out of the episode: it ended the whole eval
    (every other episode in flight with it) or slime's rollout batch, as only Ctrl-C should. It is the
    component's failure, recorded like any Exception of it."""
    kind, status = _WHERE[where]
    runner = _runner(qwen_chat, where, _PluginStop("stop here"))
    result, reward = asyncio.run(runner.run(task(), "eval"))
    if kind is None:
        assert result.failure is None and result.status == status
        return
    assert result.failure is not None and (result.failure.kind, result.failure.error_type) == (
        kind,
        "_PluginStop",
    )
    assert status is None or result.status == status
    assert reward.value == 0.0


_PROCESS = [KeyboardInterrupt(), SystemExit(2), GeneratorExit()]


@pytest.mark.parametrize(
    "exc",
    [*_PROCESS, BaseExceptionGroup("with Ctrl-C", [_PluginStop(), KeyboardInterrupt()])],
    ids=["KeyboardInterrupt", "SystemExit", "GeneratorExit", "group-holding-ctrl-c"],
)
def test_the_process_s_own_stops_go_on_up_from_a_reward(qwen_chat: ChatFormat, exc: BaseException) -> None:
    runner = _runner(qwen_chat, "reward", exc)
    with pytest.raises(type(exc)):
        asyncio.run(runner.run(task(), "eval"))


@given(
    st.recursive(
        st.sampled_from([ValueError("x"), _PluginStop(), *_PROCESS]),
        lambda inner: st.lists(inner, min_size=1, max_size=3).map(lambda e: BaseExceptionGroup("g", e)),
        max_leaves=6,
    )
)
def test_a_component_fails_exactly_when_nothing_in_it_stops_the_process(exc: BaseException) -> None:
    def leaves(exc: BaseException) -> list[BaseException]:
        if isinstance(exc, BaseExceptionGroup):
            return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
        return [exc]

    stops = (KeyboardInterrupt, SystemExit, GeneratorExit)
    assert components_failure(exc) == (not any(isinstance(leaf, stops) for leaf in leaves(exc)))
