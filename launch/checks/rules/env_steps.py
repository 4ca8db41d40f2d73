"""An env's own limit on an episode's steps against the steps its tasks need (`EnvConfig.
episode_steps_needed()`: tau2's `max_steps`, counted in orchestrator steps, two per agent tool call).

`env_data.steps_leave_tasks_room` judges the episode loop's `max_num_steps` (model calls); an env that
counts in another unit declares its own limit and its tasks' needs, judged here the same way: an RL stage
whose episodes most tasks cannot finish within the limit is refused, one that cuts some is warned about.
An eval's limit is not judged (a short one keeps a smoke test short), so only configs with an RL stage
are read."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import TrainStage
from t3rl_core.counts import counted


def env_steps_leave_tasks_room(ctx: Context) -> Iterator[Problem]:
    """The env's own step limit is enough for the steps its tasks' gold plans take."""
    if not any(isinstance(s, TrainStage) and s.curriculum.mode == "rl" for s in ctx.run.stages.values()):
        return
    declared = ctx.run.env.episode_steps_needed()
    if declared is None or not declared[1]:
        return
    field, needed = declared
    key = f"env.{field}"
    limit = getattr(ctx.run.env, field)
    cut = sum(need > limit for need in needed)
    if not cut:
        return
    yield Problem(
        key,
        f"{key} {limit}: {cut} of the {counted(len(needed), 'task')} the env prepares take more of its "
        "steps than that "
        f"even played as their gold plan (up to {max(needed)}), so they end at the limit with reward 0",
        fix=f"set {key}={max(needed)}",
        severity="error" if cut * 2 > len(needed) else "warning",
    )


RULES = (env_steps_leave_tasks_room,)
