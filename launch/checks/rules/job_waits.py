"""A wait inside a SLURM job against the job's time limit (`executor.time_limit`).

Each wait a stage's job makes before its work starts is declared here (`_waits`): a train stage's job
waits up to `executor.ray_start_timeout_s` for every node's GPUs to register with its Ray head; an eval
stage that serves its checkpoint itself waits up to `eval.server.startup_timeout_s` for its SGLang server
to load the model. A wait of the job's whole limit or more never runs out: SLURM kills the job at its
limit first (TIMEOUT, after the whole allocation was held), and the reason is never said. Typed in the
wrong unit (minutes or milliseconds for seconds), it is also the likeliest slip of the two fields, which
name their units differently (seconds, SLURM's clock). A warning, with a wait below the limit the fix."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_config_of, eval_key
from launch.checks.rules.slurm_time import SHORTEST_SECONDS
from launch.config.errors import Problem
from launch.config.schema import EvalStage, SlurmExecutorConfig, TrainStage
from t3rl_core.fields import STARTUP_USUAL, slurm_clock, slurm_fields

_DEFAULT_WAIT = 600  # SlurmExecutorConfig.ray_start_timeout_s's default


def _waits(ctx: Context) -> Iterator[tuple[str, float, str, float]]:
    """(key, seconds, what waits in the job, a wait meant) of each wait a stage's SLURM job makes."""
    slurm = ctx.run.executor
    assert isinstance(slurm, SlurmExecutorConfig)
    if any(isinstance(stage, TrainStage) for stage in ctx.run.stages.values()):
        what = "a train stage's job before its wait for the nodes' GPUs"
        yield "executor.ray_start_timeout_s", slurm.ray_start_timeout_s, what, _DEFAULT_WAIT
    for name, spec in ctx.run.stages.items():
        config = eval_config_of(ctx.run, spec) if isinstance(spec, EvalStage) else None
        if config is None or config.engine.name != "sglang" or getattr(config.engine, "url", None):
            continue  # served elsewhere: the stage starts no server
        key = eval_key(name, spec.eval, "server.startup_timeout_s")
        what = f"eval stage {name}'s job before its wait for the SGLang server it starts"
        yield key, config.server.startup_timeout_s, what, _DEFAULT_WAIT


def waits_end_within_the_job(ctx: Context) -> Iterator[Problem]:
    """Every wait of a stage's SLURM job (`_waits`) is shorter than the job's time limit."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig):
        return
    fields = slurm_fields(slurm.time_limit)
    if fields is None or fields.total_seconds == 0:  # no limit
        return
    limit = fields.total_seconds
    for wait_key, wait, what, usual in _waits(ctx):
        # a limit shorter than any stage, or a wait no start-up takes, is warned about by its own field's rule
        if wait < limit or limit < SHORTEST_SECONDS or wait > STARTUP_USUAL.most:
            continue
        key = ctx.latest(wait_key, "executor.time_limit")
        yield Problem(
            key,
            f"{wait_key} {wait:g} s is not shorter than the job's executor.time_limit "
            f"{slurm.time_limit} ({slurm_clock(limit)}): SLURM kills {what} can end and say why",
            fix=f"set {wait_key}={min(usual, limit // 2):g}"
            if key == wait_key
            else f"set executor.time_limit={slurm_clock(int(wait * 2))}, or a shorter {wait_key}",
            severity="warning",
        )


RULES = (waits_end_within_the_job,)
