"""What an env's prepare_data would refuse, judged before any stage runs: the env declares it
(`EnvConfig.prepare_refusals`, e.g. ReTool's `test_size` holding out every problem), and a config with a
prepare_data stage is refused at the env key, with the value that prepares. A sweep's point is judged as
its own run, so `-m env.data.test_size=4,1000000` names the point (was: the point's stage failed at
prepare time, after the points before it ran)."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem


def prepare_data_would_not_refuse(ctx: Context) -> Iterator[Problem]:
    env = ctx.run.env
    for field, why, fits, reads in env.prepare_refusals():
        key = f"env.{field}"
        yield Problem(
            ctx.latest(key, *(f"env.{f}" for f in reads)),
            f"prepare_data of env {env.name} would refuse it: {why}",
            fix=f"set {key}={fits}" if fits is not None else f"point env {env.name} at more data",
        )


RULES = (prepare_data_would_not_refuse,)
