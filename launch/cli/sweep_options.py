"""The command-line option `t3rl run|plan|validate -m` share to bound a sweep."""

from __future__ import annotations

from typing import Annotated

import typer

# The most --max-points may raise the bound to (launch.run.sweep_limit.MOST_POINTS, a test keeps them
# equal): every point is a whole pipeline with its own run dir and training job, and validate composes
# each one (tens of milliseconds a point): 10,000 points are a GPU-year of even one-GPU-hour runs and
# minutes of composing before the first point starts, so a larger bound is a typo (`--max-points
# 1000000000000` let a sweep of that many points expand), not a plan.
MOST_POINTS = 10_000

# None = launch.run.sweep_limit.MAX_POINTS, whose number the help repeats (a test keeps them equal): a
# cold start does not import the sweep modules for a default.
MaxPoints = Annotated[
    int | None,
    typer.Option(
        "--max-points",
        min=1,
        max=MOST_POINTS,
        metavar="N",
        help="With -m: refuse a sweep of more than N points (default 256; each point is a whole run).",
    ),
]
