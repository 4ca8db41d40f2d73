"""A training episode's step limit leaves its task room to be done: the env declares the fewest model
calls each of its tasks needs (`EnvConfig.model_calls_needed()`: one per user turn of a BFCL entry). A
limit below that for most tasks ends most episodes before their task can be completed, so the rewards
measure the limit, not the model. Refused when it cuts most tasks; a warning when it cuts some. An
eval's limit is not judged: a short one is how a smoke test stays short (the quickstart's)."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import TrainStage


def steps_leave_tasks_room(ctx: Context) -> Iterator[Problem]:
    """Each RL stage's max_num_steps is enough for the tasks' turns."""
    limits = [
        (f"stages.{name}.curriculum.max_num_steps", stage.curriculum.max_num_steps)
        for name, stage in ctx.run.stages.items()
        if isinstance(stage, TrainStage) and stage.curriculum.mode == "rl"
    ]
    needed = ctx.run.env.model_calls_needed() if limits else None
    if not needed:
        return
    for key, steps in limits:
        cut = sum(need > steps for need in needed)
        if not cut:
            continue
        most = cut * 2 > len(needed)
        yield Problem(
            key,
            f"{key} {steps}: {cut} of the env's {len(needed)} tasks need more model calls than that (one "
            f"per user turn, up to {max(needed)}), so they end before they can be completed",
            fix=f"set {key}={max(needed)}",
            severity="error" if most else "warning",
        )


RULES = (steps_leave_tasks_room,)
