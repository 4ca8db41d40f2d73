"""Single-answer worlds: one ToolRL response for a training step and reward variant; one ReTool answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from t3rl_core.rewards.base import RewardInput, within_bounds
from t3rl_core.rewards.retool import ReToolOutcomeReward, ReToolRewardConfig
from t3rl_core.rewards.toolrl import ToolRLReward, ToolRLRewardConfig
from t3rl_core.score.verdict import Verdict

# ToolRL's published switches (its environment variables, lower-cased) are the config's bool fields;
# SCHEDULELENGTH only acts together with WITHLENGTH, as in ToolRL.
_IMPLIES = {"schedule_length": ("with_length",)}


def toolrl_config(
    variant: str | Iterable[str] | Mapping[str, Any] | ToolRLRewardConfig | None = None,
) -> ToolRLRewardConfig:
    """The reward config of a ToolRL variant: None = the published run; a switch name ("coarse",
    "refined", "intermediate", "correct_max1", "max1_step30_max3", "schedule_reward", "with_length",
    "schedule_length") or several; or the config's fields as a mapping."""
    if isinstance(variant, ToolRLRewardConfig):
        return variant
    if variant is None:
        return ToolRLRewardConfig()
    if isinstance(variant, Mapping):
        return ToolRLRewardConfig.model_validate(dict(variant))
    names = [variant] if isinstance(variant, str) else list(variant)
    switches = sorted(
        name for name, field in ToolRLRewardConfig.model_fields.items() if field.annotation is bool
    )
    unknown = [name for name in names if name not in switches]
    if unknown:
        raise ValueError(f"unknown ToolRL variant(s) {unknown}; known: {', '.join(switches)}")
    fields = {implied: True for name in names for implied in (name, *_IMPLIES.get(name, ()))}
    return ToolRLRewardConfig.model_validate(fields)


def toolrl(
    response: str,
    ground_truth: str,
    *,
    step: int = 0,
    variant: str | Iterable[str] | Mapping[str, Any] | ToolRLRewardConfig | None = None,
    id: str | None = None,
) -> Verdict:
    """ToolRL's rule reward of one decoded answer (`<think>…</think>` + `<tool_call>`/`<response>`) at
    training `step` (slime's rollout id; ToolRL's step is step + step_offset)."""
    reward = ToolRLReward(toolrl_config(variant))
    outcome = {"response": response, "ground_truth": ground_truth, "answered": True}
    inp = RewardInput(outcome=outcome, response=response, label=ground_truth, step=step)
    # The checks a reward's result passes in training and eval: no NaN, None or text scored here either.
    result = within_bounds(reward, inp, reward(inp))
    return Verdict("toolrl", id, result.value, bool(result.metrics["accuracy"]), dict(result.metrics))


def retool(
    response: str, answer: str, *, config: ReToolRewardConfig | None = None, id: str | None = None
) -> Verdict:
    """ReTool's outcome reward of one response (−1 bad format, 0 wrong, 1 right boxed answer)."""
    reward = ReToolOutcomeReward(config or ReToolRewardConfig())
    outcome = {"response": response, "ground_truth": answer}
    inp = RewardInput(outcome=outcome, response=response, label=answer, metadata={"task_id": id})
    result = within_bounds(reward, inp, reward(inp))
    # An answer nobody graded says why (RewardResult.ungraded): its 0 is the reference's, no grade.
    details = dict(result.metrics) | ({"ungraded": result.ungraded} if result.ungraded else {})
    return Verdict("retool", id, result.value, result.value == 1.0, details)
