"""A wait inside a SLURM job against the job's time limit (`executor.time_limit`).

A train stage's job waits up to `executor.ray_start_timeout_s` for every node's GPUs to register with its
Ray head, then fails with that reason. A wait of the job's whole limit or more never runs out: SLURM kills
the job at its limit first (TIMEOUT, after the whole allocation was held), and the reason is never said.
Typed in the wrong unit (minutes or milliseconds for seconds), it is also the likeliest slip of the two
fields, which name their units differently (seconds, SLURM's clock). A warning, with a wait below the
limit the fix."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.rules.slurm_time import SHORTEST_SECONDS
from launch.config.errors import Problem
from launch.config.schema import SlurmExecutorConfig, TrainStage
from t3rl_core.fields import STARTUP_USUAL, slurm_clock, slurm_fields

_DEFAULT_WAIT = 600  # SlurmExecutorConfig.ray_start_timeout_s's default


def waits_end_within_the_job(ctx: Context) -> Iterator[Problem]:
    """The Ray start's wait of a train stage's SLURM job is shorter than the job's time limit."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig):
        return
    if not any(isinstance(stage, TrainStage) for stage in ctx.run.stages.values()):
        return
    fields = slurm_fields(slurm.time_limit)
    if fields is None or fields.total_seconds == 0:  # no limit
        return
    limit, wait = fields.total_seconds, slurm.ray_start_timeout_s
    # a limit shorter than any stage, or a wait no start-up takes, is warned about by its own field's rule
    if wait < limit or limit < SHORTEST_SECONDS or wait > STARTUP_USUAL.most:
        return
    key = ctx.latest("executor.ray_start_timeout_s", "executor.time_limit")
    meant = min(_DEFAULT_WAIT, limit // 2)
    yield Problem(
        key,
        f"executor.ray_start_timeout_s {wait} s is not shorter than the job's executor.time_limit "
        f"{slurm.time_limit} ({slurm_clock(limit)}): SLURM kills a train stage's job at its limit before "
        "its wait for the nodes' GPUs can end and say why",
        fix=f"set executor.ray_start_timeout_s={meant}"
        if key == "executor.ray_start_timeout_s"
        else f"set executor.time_limit={slurm_clock(wait * 2)}, or a shorter executor.ray_start_timeout_s",
        severity="warning",
    )


RULES = (waits_end_within_the_job,)
