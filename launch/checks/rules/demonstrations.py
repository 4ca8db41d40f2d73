"""A stage of mode sft trains on whole conversations: the split it reads is one the env declares as
demonstrations (`EnvConfig.demonstration_splits()`: tau2's gold dialogues, ReTool's worked solutions).
A split of bare prompts (tau2_train, retool_train) has no assistant turn, so the SFT loss has no token
to learn from, and the stage trains nothing while it looks like it ran."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import TrainStage


def sft_reads_demonstrations(ctx: Context) -> Iterator[Problem]:
    """Every SFT stage reads a split of demonstrations."""
    demonstrations = ctx.run.env.demonstration_splits()
    if demonstrations is None:
        return
    prepared = set(ctx.run.env.split_names())
    for name, stage in ctx.run.stages.items():
        if not isinstance(stage, TrainStage) or stage.curriculum.mode != "sft":
            continue
        split = stage.curriculum.train_split
        if split in demonstrations or split not in prepared:
            continue  # an unknown split is the split rules' to report
        split_key, mode_key = f"stages.{name}.curriculum.train_split", f"stages.{name}.curriculum.mode"
        key = ctx.latest(split_key, mode_key)
        if key == split_key and demonstrations:
            fix = f"set {split_key}={sorted(demonstrations)[0]} (the env's demonstrations)"
        else:
            fix = f"set {mode_key}=rl" + (
                f" (env {ctx.run.env.name} prepares no demonstrations)"
                if not demonstrations
                else f", or {split_key}={sorted(demonstrations)[0]} (the env's demonstrations)"
            )
        yield Problem(
            key,
            f"stage {name} is SFT, but {split} holds prompts without the assistant's turns: the SFT loss "
            "would have no token to learn from",
            fix=fix,
        )


RULES = (sft_reads_demonstrations,)
