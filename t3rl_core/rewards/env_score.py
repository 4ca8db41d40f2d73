"""The environment's own score as the reward: for worlds that bring their scoring with them (a
verifiers environment's rubric, an OpenEnv environment's step rewards)."""

from __future__ import annotations

from typing import Literal

from t3rl_core.config import RewardConfig
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult


class EnvScoreRewardConfig(RewardConfig):
    """reward = outcome["reward"]; the env's named scores (outcome["metrics"]) are logged beside it."""

    NEEDS_OUTCOME = frozenset({"reward", "metrics"})

    name: Literal["env_score"] = "env_score"


class EnvScoreReward(Reward):
    def __init__(self, config: EnvScoreRewardConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        metrics = {name: float(value) for name, value in (inp.outcome.get("metrics") or {}).items()}
        return RewardResult(value=float(inp.outcome["reward"]), metrics=metrics)
