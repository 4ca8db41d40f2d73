"""A world whose outcome holds turn rewards and turn steps that do not fit (lengths, types) fails its
own episode as an env failure naming the world and the lengths, counted like any other; `generate`
used to raise on it (credit.turn_record), ending slime's whole rollout."""

from __future__ import annotations

from typing import Any

import pytest

from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import FailureRateExceeded
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.hooks.test_hooks_slime_failures import _play
from tests.rollout.fakes import ToyEnv
from tests.support.slime_sample import Sample


class _MiscountedTurns(ToyEnv):
    """Rewards two turns but reports the steps of three."""

    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "turn_rewards": [1.0, 0.0], "turn_steps": [1, 1, 0]}


class _TextTurns(ToyEnv):
    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "turn_rewards": "1.0", "turn_steps": [1]}


def test_mismatched_turn_fields_are_the_worlds_failure(monkeypatch: Any, qwen_chat: Any) -> None:
    use_runner(monkeypatch, qwen_chat, env=_MiscountedTurns)
    args = slime_args(max_failure_rate=0.5)
    [broken] = _play(args, [toy_sample(0, group=0)])
    assert broken.status is Sample.Status.FAILED and broken.remove_sample
    failure = broken.metadata["t3rl_failure"]
    assert (failure["kind"], failure["error_type"]) == ("env", "InvalidTurnFields")
    assert "_MiscountedTurns" in failure["message"] and "2 turn rewards for 3 turns" in failure["message"]
    assert broken.metadata["turn_credit"] is None
    extra: dict = {}
    hooks.log_rollout_data(0, args, [broken, *_healthy(monkeypatch, qwen_chat, args)], extra, 1.0)
    assert extra["rollout/failures/env/InvalidTurnFields"] == 1.0


def _healthy(monkeypatch: Any, qwen_chat: Any, args: Any) -> list[Sample]:
    use_runner(monkeypatch, qwen_chat)
    return _play(args, [toy_sample(i, group=i // 4) for i in range(4, 8)])


def test_turn_fields_of_the_wrong_type_are_the_worlds_failure(monkeypatch: Any, qwen_chat: Any) -> None:
    use_runner(monkeypatch, qwen_chat, env=_TextTurns)
    [broken] = _play(slime_args(max_failure_rate=0.5), [toy_sample(0, group=0)])
    assert broken.metadata["t3rl_failure"]["error_type"] == "InvalidTurnFields"
    assert "turn_rewards is str" in broken.metadata["t3rl_failure"]["message"]


def test_a_world_that_always_miscounts_stops_the_run(monkeypatch: Any, qwen_chat: Any) -> None:
    use_runner(monkeypatch, qwen_chat, env=_MiscountedTurns)
    with pytest.raises(FailureRateExceeded, match="env/InvalidTurnFields"):
        _play(slime_args(max_failure_rate=0.0), [toy_sample(0, group=0)])
