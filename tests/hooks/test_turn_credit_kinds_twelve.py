"""Turn-level credit, round twelve: a world's turns that do not fit the steps its episode took.

`turn_spans` reads each turn's tokens from the loop's step starts and the world's `turn_steps`. Nothing
checked the two against each other: a world counting a step it never saw (the call cut at the token
limit, which no env stepped) gave that call's tokens to a turn and its reward's advantage; one leaving
steps out gave their tokens to no turn; a turn of no step with a reward (0.0 for "not reached") had no
tokens yet entered the turn's group mean of those that reached it. Each is now the world's failure
(InvalidTurnFields), as a miscounted list already was.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RolloutConfig
from t3rl_core.credit import turn_fields_problem, turn_spans
from t3rl_core.engines.base import Generation
from tests.rollout.fakes import FixedEngine, play
from tests.rollout.test_runtime_kinds_four import _TurnToy
from tests.rollout.test_tito_properties import _echo


class _Skewed(_TurnToy):
    """Reports its turns as _TurnToy does, its last turn's step count moved by `skew`, or a reward of 0.0
    for the turn it never reached."""

    def __init__(self, skew: int = 0, reward_unreached: bool = False) -> None:
        super().__init__()
        self.skew, self.reward_unreached = skew, reward_unreached

    def outcome(self) -> dict[str, Any]:
        outcome = super().outcome()
        steps, rewards = list(outcome["turn_steps"]), list(outcome["turn_rewards"])
        steps[-1] += self.skew
        if self.reward_unreached:
            rewards = [0.0 if r is None else r for r in rewards]
        return {**outcome, "turn_steps": steps, "turn_rewards": rewards}


def _played(chat: ChatFormat, world: _TurnToy) -> Any:
    """Turn 0 answered in two steps, then turn 1's first call cut at the token limit (no step)."""

    def generation(text: str, finish: str) -> Generation:
        ids = chat.encode(text) + ([chat.stop_token_ids[0]] if finish == "stop" else [])
        return Generation(ids, [-0.5] * len(ids), finish)

    outputs = [generation(_echo(chat, "x"), "stop"), generation("The sum is 3.", "stop")]
    outputs.append(generation("Let me think about 3 and", "length"))
    return play(chat, world, FixedEngine(outputs), RolloutConfig())


def test_turns_that_fit_the_steps_are_credited(qwen_chat: ChatFormat) -> None:
    result = _played(qwen_chat, _Skewed())
    assert result.failure is None and result.outcome["turn_steps"] == [2, 0]


def test_a_world_counting_a_step_it_never_took_fails_its_episode(qwen_chat: ChatFormat) -> None:
    """[2, 1]: turn 1 would have spanned the cut call, which no env saw."""
    result = _played(qwen_chat, _Skewed(skew=1))
    assert result.failure is not None and result.failure.error_type == "InvalidTurnFields"
    assert "add up to 3 steps, the episode took 2" in result.error
    assert "turn_steps" not in result.outcome


def test_a_world_leaving_steps_out_fails_its_episode(qwen_chat: ChatFormat) -> None:
    world = _Skewed()
    world.outcome = lambda: {**_TurnToy.outcome(world), "turn_steps": [1, 0]}  # type: ignore[method-assign]
    result = _played(qwen_chat, world)
    assert result.failure is not None and "add up to 1 steps, the episode took 2" in result.error


def test_a_reward_for_a_turn_of_no_step_fails_its_episode(qwen_chat: ChatFormat) -> None:
    result = _played(qwen_chat, _Skewed(reward_unreached=True))
    assert result.failure is not None and "turn(s) [1] of no step" in result.error


def _reference_turn(position: int, step_starts: list[int], turn_steps: list[int]) -> int | None:
    """The turn a response token belongs to: that of the last step started at or before it; none before
    the first step, nor in a call no env stepped (a step past the turns' own)."""
    started = [j for j, start in enumerate(step_starts) if start <= position]
    if not started or started[-1] >= sum(turn_steps):
        return None
    step = started[-1]
    for k, count in enumerate(turn_steps):
        if step < count:
            return k
        step -= count
    raise AssertionError("unreachable")


@settings(max_examples=400, deadline=None)
@given(
    turn_steps=st.lists(st.integers(0, 3), min_size=1, max_size=5),
    unstepped=st.booleans(),
    data=st.data(),
)
def test_turns_fitting_the_steps_tile_them_as_the_reference_does(
    turn_steps: list[int], unstepped: bool, data: st.DataObject
) -> None:
    """Any steps a world reports consistently: accepted, and each turn's span holds exactly the tokens of
    its steps (and the observations after them); any other step count is refused."""
    taken = sum(turn_steps)
    calls = taken + unstepped
    gaps = data.draw(st.lists(st.integers(0, 4), min_size=calls + 1, max_size=calls + 1))
    step_starts = [sum(gaps[: j + 1]) for j in range(calls)]
    length = sum(gaps) + data.draw(st.integers(0, 3))
    rewards = [0.5 if count else None for count in turn_steps]
    outcome = {"turn_rewards": rewards, "turn_steps": turn_steps}
    assert turn_fields_problem(outcome, taken) is None
    spans = turn_spans(step_starts, turn_steps, length)
    for position in range(length):
        owners = [k for k, (start, end) in enumerate(spans) if start <= position < end]
        expected = _reference_turn(position, step_starts, turn_steps)
        assert owners == ([] if expected is None else [expected]), (position, spans)
    other = data.draw(st.integers(0, 20).filter(lambda n: n != taken))
    assert turn_fields_problem(outcome, other) is not None
