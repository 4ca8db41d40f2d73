"""T3RL's progress reward and the all-turns-correct binary reward, over a multi-turn env's outcome.

Both read the keys every turn-scored env reports in `Env.outcome()`: `turns_correct`, `turns_total`,
`accuracy`, `interactions`, `format_errors`. Logged beside the reward (as T3RL does): progress,
accuracy and format_reward = (interactions − format_errors) / interactions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t3rl_core.rewards.base import Reward, RewardInput, RewardResult
from t3rl_core.rewards.progress_config import BinaryRewardConfig, FormatRewardConfig, ProgressRewardConfig


def turn_metrics(outcome: Mapping[str, Any]) -> dict[str, float]:
    """progress, accuracy, format_reward and hints of one episode outcome."""
    total = int(outcome["turns_total"])
    interactions = int(outcome["interactions"])
    well_formed = interactions - int(outcome["format_errors"])
    return {
        "progress": int(outcome["turns_correct"]) / total if total else 0.0,
        "accuracy": float(outcome["accuracy"]),
        # An episode without a single model action has shown no format at all: it earns nothing.
        "format_reward": well_formed / interactions if interactions else 0.0,
        # Corrective hints the environment gave in the episode (train-mode augmentation; 0 when off).
        "hints": float(sum((outcome.get("hints") or {}).values())),
    }


class _Share(Reward):
    """A reward that is a share of the episode (of its turns, of its actions): in [0, 1]."""

    def bounds(self, inp: RewardInput) -> tuple[float, float]:
        return 0.0, 1.0


class FormatReward(_Share):
    """reward = format_reward if the episode made at least one call that ran, else 0.0."""

    def __init__(self, config: FormatRewardConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        metrics = turn_metrics(inp.outcome)
        called = int(inp.outcome.get("tool_calls", 0)) > 0
        return RewardResult(value=metrics["format_reward"] if called else 0.0, metrics=metrics)


class ProgressReward(_Share):
    """reward = turns_correct / turns_total (unreached turns count as incorrect)."""

    def __init__(self, config: ProgressRewardConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        metrics = turn_metrics(inp.outcome)
        return RewardResult(value=metrics["progress"], metrics=metrics)


class BinaryReward(_Share):
    """reward = 1.0 when the whole episode is correct (its accuracy), else 0.0."""

    def __init__(self, config: BinaryRewardConfig) -> None:
        self.config = config

    def __call__(self, inp: RewardInput) -> RewardResult:
        metrics = turn_metrics(inp.outcome)
        return RewardResult(value=metrics["accuracy"], metrics=metrics)
