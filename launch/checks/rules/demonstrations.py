"""The splits an env declares as demonstrations (`EnvConfig.demonstration_splits()`: tau2's gold
dialogues, ReTool's worked solutions) hold whole conversations with the assistant's turns; the others
hold bare prompts. A stage of mode sft trains on the first kind: on bare prompts (tau2_train,
retool_train) the SFT loss has no assistant token to learn from, and the stage trains nothing while it
looks like it ran. A stage of mode rl starts its episodes from the second kind: from a demonstration,
every prompt already holds its answer."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import TrainStage

# Split names that hold held-out tasks: never proposed as training data.
_SCORED = ("test", "unseen", "val")


def stages_read_their_kind_of_split(ctx: Context) -> Iterator[Problem]:
    """An SFT stage reads demonstrations; an RL stage reads prompts."""
    demonstrations = ctx.run.env.demonstration_splits()
    if demonstrations is None:
        return
    prepared = ctx.run.env.split_names()
    prompts = [s for s in prepared if s not in demonstrations and not any(w in s for w in _SCORED)]
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or stage.curriculum.train_split not in prepared:
            continue  # an unknown split is the split rules' to report
        split, sft = stage.curriculum.train_split, stage.curriculum.mode == "sft"
        if (split in demonstrations) == sft:
            continue
        split_key, mode_key = f"stages.{name}.curriculum.train_split", f"stages.{name}.curriculum.mode"
        fitting = sorted(demonstrations) if sft else prompts
        other_mode = "rl" if sft else "sft"
        if ctx.latest(split_key, mode_key) == split_key and fitting:
            key, fix = split_key, f"set {split_key}={fitting[0]}"
        else:
            key, fix = mode_key, f"set {mode_key}={other_mode}"
        why = (
            f"stage {name} is SFT, but {split} holds prompts without the assistant's turns: the SFT loss "
            "would have no token to learn from"
            if sft
            else f"stage {name} is RL, but {split} holds demonstrations: every episode would start from "
            "a conversation that already holds its answer"
        )
        yield Problem(key, why, fix=fix)


RULES = (stages_read_their_kind_of_split,)
