"""What the prepare_data stage would refuse, as the env declares it (`EnvConfig.preparation_problems`:
BFCL's id cut against the entries bfcl-eval ships): found before any stage runs, not when the data
stage stops."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem


def data_prepares(ctx: Context) -> Iterator[Problem]:
    """The env's settings are ones its data preparation accepts."""
    for key, message, fix in ctx.run.env.preparation_problems():
        yield Problem(f"env.{key}", message, fix=fix)


RULES = (data_prepares,)
