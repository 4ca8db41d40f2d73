"""A reward that gives every episode one value teaches nothing. A reward section declares when its
settings leave it a single value (`RewardConfig.constant()`: ToolRL's format, correctness and length
ranges each a single point, with no schedule moving them). Every sample of a group then gets the group's
mean, every advantage is 0, and an RL stage never updates the policy, as with one sample per prompt. The
section an RL train stage scores with (the root `reward`, with the stage's own overrides) is refused,
blamed on the range field typed last, with that field's default as the fix when it lets the reward vary.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import TrainStage, stage_sections
from t3rl_core.config import RewardConfig


def rl_rewards_vary(ctx: Context) -> Iterator[Problem]:
    """The reward of every RL train stage can give two episodes different values."""
    blamed_already: set[str] = set()
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or stage.curriculum.mode != "rl":
            continue
        try:
            reward = stage_sections(ctx.run, stage)[1]
        except ValueError:
            continue  # a stage override that does not validate is reported by stages.stage_sections_valid
        found = reward.constant()
        if found is None:
            continue
        fields, value = found
        keys = {f: f"stages.{name}.reward.{f}" if f in stage.reward else f"reward.{f}" for f in fields}
        by_recency = sorted(fields, key=lambda f: ctx.provenance.order(keys[f]), reverse=True)
        defaults = type(reward).model_fields
        varies = [f for f in by_recency if _varies_with(reward, f, defaults[f].default)]
        blamed = varies[0] if varies else by_recency[0]
        if keys[blamed] in blamed_already:
            continue  # the root reward of several stages: one problem
        blamed_already.add(keys[blamed])
        yield Problem(
            keys[blamed],
            f"the reward stage {name} scores with gives every episode {value:g} ({', '.join(fields)} leave "
            "it no other value): each advantage is the reward minus its group's mean, always 0, so "
            "training never updates the policy",
            fix=f"set {keys[blamed]}={defaults[blamed].default:g}"
            if varies
            else f"give {keys[blamed]} a value other than its pair's",
        )


def _varies_with(reward: RewardConfig, field: str, value: object) -> bool:
    """The reward can vary with `field` set to `value` (a copy: the section itself is left as it is)."""
    return reward.model_copy(update={field: value}).constant() is None


RULES = (rl_rewards_vary,)
