"""Reward of the counter world: 1 for the target in the fewest calls, less per extra call."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from t3rl_core.config import RewardConfig
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult


class ExactTargetConfig(RewardConfig):
    # The outcome keys read below: an env that does not provide them is refused before a run.
    NEEDS_OUTCOME: ClassVar[frozenset[str]] = frozenset({"value", "target", "calls"})

    name: str = "exact_target"
    extra_call_penalty: float = Field(0.1, ge=0)  # subtracted per call beyond the fewest possible
    max_add: int = Field(5, ge=1)  # must equal env.max_add: it sets the fewest possible calls


class ExactTarget(Reward):
    Config = ExactTargetConfig

    def __init__(self, config: ExactTargetConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        value, target, calls = inp.outcome["value"], inp.outcome["target"], inp.outcome["calls"]
        fewest = -(-abs(target) // self.config.max_add)
        extra = max(0, calls - fewest)
        reached = float(value == target)
        score = max(0.0, reached - self.config.extra_call_penalty * extra)
        return RewardResult(score, {"reached": reached, "extra_calls": float(extra)})
