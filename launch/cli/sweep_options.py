"""The command-line option `t3rl run|plan|validate -m` share to bound a sweep."""

from __future__ import annotations

from typing import Annotated

import typer

from launch.run.sweep_bounds import MAX_POINTS, MOST_POINTS

# None = MAX_POINTS (launch.run.sweep.expand_points); launch.run.sweep_bounds says why each number.
MaxPoints = Annotated[
    int | None,
    typer.Option(
        "--max-points",
        min=1,
        max=MOST_POINTS,  # each point is a whole run: more is a typo, not a plan
        metavar="N",
        help=f"With -m: refuse a sweep of more than N points (default {MAX_POINTS}; each point is a whole "
        "run).",
    ),
]
