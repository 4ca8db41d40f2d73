"""The configs of the turn-scored rewards (`t3rl_core.rewards.progress`), apart from the rewards so that
validating a reward section imports only pydantic, as the envs' config modules do."""

from __future__ import annotations

from typing import Literal

from t3rl_core.config import RewardConfig

# The outcome keys `turn_metrics` reads.
TURN_FIELDS = frozenset({"turns_total", "turns_correct", "accuracy", "interactions", "format_errors"})


class ProgressRewardConfig(RewardConfig):
    """correct turns / total turns of the episode (T3RL's fine-grained progress reward)."""

    NEEDS_OUTCOME = TURN_FIELDS

    name: Literal["progress"] = "progress"


class BinaryRewardConfig(RewardConfig):
    """1 when every turn of the episode is correct, else 0."""

    NEEDS_OUTCOME = TURN_FIELDS

    name: Literal["binary"] = "binary"


class FormatRewardConfig(RewardConfig):
    """The paper's format/syntax stage: the share of the model's actions that parse, and nothing for an
    episode without a single well-formed tool call (PROPOSED shape: the paper publishes no formula)."""

    NEEDS_OUTCOME = TURN_FIELDS | {"tool_calls"}

    name: Literal["bfcl_format"] = "bfcl_format"
