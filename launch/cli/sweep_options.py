"""The command-line option `t3rl run|plan|validate -m` share to bound a sweep."""

from __future__ import annotations

from typing import Annotated

import typer

# None = launch.run.sweep_limit.MAX_POINTS, whose number the help repeats (a test keeps them equal): a
# cold start does not import the sweep modules for a default.
MaxPoints = Annotated[
    int | None,
    typer.Option(
        "--max-points",
        min=1,
        metavar="N",
        help="With -m: refuse a sweep of more than N points (default 256; each point is a whole run).",
    ),
]
