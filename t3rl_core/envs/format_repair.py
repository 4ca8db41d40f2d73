"""The format-repair protocol: a turn that breaks the action format gets a fixed correction and one more
try at a fixed temperature before the episode is given up (Tau2-RL-Pipeline's rollout and pass@k eval).

An env opts in by setting `Env.format_repair` (built here from its config and the episode's mode) and
answering `Env.format_problem`; the episode loop (`t3rl_core.rollout.episode`) does the rest.

Token accounting (TITO). The reference re-tokenises its final message list, so a repaired turn simply
replaces the failed one there. t3rl trains on the sampled ids, so the loop rewinds instead: when the
repair turn leaves the history, the trajectory is cut back to where the failed generation started and
the repaired generation's own ids and log-probs are appended in its place. The failed tokens are then
in no trained response, and `len(log_probs) == len(loss_mask) == response_length` holds by
construction. The repaired tokens were sampled after the failed text and the correction, so their
log-probs belong to that context, not to the one they are trained in: `train_on_repaired: false`
keeps them as context only (loss mask 0) for setups that use the rollout log-probs (e.g. TIS). When
the repair turn stays in the history, the failed tokens stay too, with loss mask 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from t3rl_core.fields import NonNegativeFloat, Text
from t3rl_core.strict import StrictModel

# Tau2-RL-Pipeline's correction, word for word (tau2_rl_pipeline/rollout.py, eval/eval_passk.py).
REFERENCE_MESSAGE = (
    "FORMAT ERROR. Re-output EXACTLY in the required <tool_call> format: "
    '<tool_call>{"name": "...", "arguments": {...}}</tool_call>. One action only.'
)


class KeepInHistory(StrictModel):
    """Per mode: whether the failed turn and the correction stay in the conversation after a repair."""

    # Training: false = only the repaired turn is kept (the reference's rollout).
    train: bool = False
    # Evaluation: true = the model keeps seeing its failed turn and the correction (the reference's eval).
    eval: bool = True


class FormatRepairConfig(StrictModel):
    """Retry a malformed turn (the reference: once, greedily) before giving the episode up."""

    # Retries after a malformed turn; each sends the correction again after the last failed text.
    attempts: int = Field(1, ge=1, le=10)
    # Sampling temperature of the retries (0 = greedy); the rest of the sampling is the episode's.
    temperature: NonNegativeFloat = 0.0
    # The user message that asks for the fix.
    message: Text = Field(REFERENCE_MESSAGE, min_length=1)
    keep_in_history: KeepInHistory = KeepInHistory()
    # Whether the repaired turn is trained on (loss mask 1) or kept as context only (loss mask 0).
    train_on_repaired: bool = True


@dataclass(frozen=True)
class FormatRepair:
    """The protocol as one episode applies it: `keep_in_history` resolved for the episode's mode."""

    attempts: int
    temperature: float
    message: str
    keep_in_history: bool
    train_on_repaired: bool

    @classmethod
    def for_mode(cls, config: FormatRepairConfig, mode: Literal["train", "eval"]) -> FormatRepair:
        return cls(
            attempts=config.attempts,
            temperature=config.temperature,
            message=config.message,
            keep_in_history=getattr(config.keep_in_history, mode),
            train_on_repaired=config.train_on_repaired,
        )
