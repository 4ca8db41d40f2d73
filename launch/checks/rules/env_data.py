"""What an env declares about its data, read without preparing any:

- its demonstration splits (`EnvConfig.demonstration_splits()`: tau2's gold dialogues, ReTool's worked
  solutions), whole conversations with the assistant's turns; the other splits hold bare prompts. A
  stage of mode sft on bare prompts has no assistant token to learn from (it trains nothing while it
  looks like it ran); a stage of mode rl on demonstrations starts every episode from its answer;
- the fewest model calls each task needs (`EnvConfig.model_calls_needed()`: one per user turn of a BFCL
  entry): an RL stage's step limit below that for most tasks ends most episodes before their task can
  be completed, so the rewards measure the limit, not the model (refused; a warning when it cuts
  some). An eval's limit is not judged: a short one is how a smoke test stays short (the quickstart's).
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from launch.config.schema import TrainStage
from t3rl_core.counts import counted

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


def steps_leave_tasks_room(ctx: Context) -> Iterator[Problem]:
    """Each RL stage's max_num_steps is enough for the tasks' turns."""
    limits = [
        (f"stages.{name}.curriculum.max_num_steps", stage.curriculum.max_num_steps)
        for name, stage in ctx.run.stages.items()
        if isinstance(stage, TrainStage) and stage.curriculum.mode == "rl"
    ]
    if not limits:
        return
    bound = ctx.run.env.model_calls_bound()
    if bound is not None and all(steps >= bound for _, steps in limits):
        return  # no task needs more calls than any limit allows
    needed = ctx.run.env.model_calls_needed()
    if not needed:
        return
    for key, steps in limits:
        cut = sum(need > steps for need in needed)
        if not cut:
            continue
        most = cut * 2 > len(needed)
        yield Problem(
            key,
            f"{key} {steps}: {cut} of the env's {counted(len(needed), 'task')} need more model calls than "
            "that (one "
            f"per user turn, up to {max(needed)}), so they end before they can be completed",
            fix=f"set {key}={max(needed)}",
            severity="error" if most else "warning",
        )


def one_limit_on_model_calls(ctx: Context) -> Iterator[Problem]:
    """An env that limits an episode's model calls itself (`EnvConfig.model_call_limit()`: ReTool's
    `max_turns`) and the stage's `max_num_steps` limit one count: the higher of the two never takes
    effect, so a value raised on one side alone does nothing (a warning on the side set last)."""
    limit = ctx.run.env.model_call_limit()
    if limit is None:
        return
    env_key, cap = f"env.{limit[0]}", limit[1]
    caps = [
        (f"stages.{name}.curriculum.max_num_steps", stage.curriculum.max_num_steps)
        for name, stage in ctx.run.stages.items()
        if isinstance(stage, TrainStage) and stage.curriculum.mode == "rl"
    ]
    caps += [
        (eval_key(stage, overrides, "max_num_steps"), config.max_num_steps)
        for stage, config, overrides in eval_configs(ctx.run)
        if config.max_num_steps is not None
    ]
    lower = [(key, steps) for key, steps in caps if steps < cap]
    if lower and ctx.latest(env_key, *(key for key, _ in lower)) == env_key:
        listed = ", ".join(f"{key} {steps}" for key, steps in lower)
        yield Problem(
            env_key,
            f"{env_key} is {cap}, but the episode loop ends every episode first ({listed}): "
            "it does nothing there",
            fix="set " + " ".join(f"{key}={cap}" for key, _ in lower),
            severity="warning",
        )
    for key, steps in caps:
        if steps > cap and ctx.latest(key, env_key) == key:
            yield Problem(
                key,
                f"{key} is {steps}, but {env_key} {cap} ends every episode first: it does nothing",
                fix=f"set {env_key}={steps}",
                severity="warning",
            )


RULES = (
    stages_read_their_kind_of_split,
    steps_leave_tasks_room,
    one_limit_on_model_calls,
)
