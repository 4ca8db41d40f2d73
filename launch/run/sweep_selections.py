"""`--only S` / `--from S` of a sweep, judged for every new point before the sweep starts.

Each point of a new sweep is a new record, and the pipeline's `decide` refuses a selection whose stage
reads one no stage of a new record will have made (`Selection.unmade`). A single run is refused so before
its record is made (`launch.run.steps.refuse_selection_of_a_new_record`); a sweep's points were refused
one by one by the pipeline, after the sweep dir was made and, for a selection that only some points cannot
start (their stages differ), after the points before them ran. Here the same reading is applied to every
new point's plan at once, each refusal naming its point, and nothing runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.checks.context import EVERY_STAGE, Selection
from launch.config.errors import Problem
from launch.plan.build import Plan
from launch.run.sweep import Point


def new_points_refused(
    points: Sequence[tuple[Point, Plan]], selection: Selection, new: Sequence[int]
) -> list[Problem]:
    """One problem per point of index in `new` (a new record) whose plan cannot start at `selection`."""
    if selection == EVERY_STAGE:
        return []
    from launch.run.pipeline import refused_in_a_new_record  # lazy: only for a selection given

    problems = []
    for point, plan in points:
        if point.index not in new:
            continue  # a point of the sweep extended ran before: its record decides
        for problem in refused_in_a_new_record(selection, plan, plan.run_dir):
            varying = " ".join(point.varying)
            problems.append(problem.replace(message=f"point {point.index} ({varying}): {problem.message}"))
    return problems
