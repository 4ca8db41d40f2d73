"""A search's direction against what its objective measures: `hydra.sweeper.direction=minimize` with
`objective.metric=overall.accuracy` searched for the worst learning rate, and an objective that is a setting
the eval echoes (`overall.samples`, `temperature`) scored every trial alike: both were valid.

Each number of an eval's summary.json declares what it is (t3rl_core.eval.metrics' blocks, the runner's
top-level numbers): a score, better when higher (accuracy, progress, reward, pass@k, pass^k); a setting or
count the config fixes (the same in every trial); or a cost (wall time, response tokens), which either
direction may mean. A score minimised is warned about, with `maximize` as the fix; a setting as the
objective is refused, with the score the search is likeliest to mean.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from launch.config.errors import Problem
from launch.config.schema import ObjectiveConfig

# A summary block's scores (t3rl_core.eval.metrics._block): better when higher.
_SCORES = ("accuracy", "progress", "reward")
_SCORE_PREFIXES = ("pass@", "pass^")
# Numbers the config fixes, echoed into summary.json (t3rl_core.eval.runner._summary, the block's counts).
_SETTINGS = ("samples", "temperature", "max_new_tokens", "max_num_steps", "tasks", "episodes")


def echoes_a_setting(metric: str) -> bool:
    """The summary number is one the config fixes (`overall.tasks`, `temperature`): no trial's result."""
    return metric.rpartition(".")[2] in _SETTINGS


def objective_direction_problems(
    objective: ObjectiveConfig | None, sweeper: Mapping[str, Any], source_of: Callable[[str], str]
) -> list[Problem]:
    """The search's objective is a result, and a score is maximised."""
    if objective is None:
        return []
    last = objective.metric.rpartition(".")[2]
    if echoes_a_setting(objective.metric):
        return [
            Problem(
                "objective.metric",
                f"objective.metric is {objective.metric}, a number the config fixes and summary.json echoes: "
                "every trial scores the same, so the search learns nothing",
                source_of("objective.metric"),
                fix="set objective.metric=overall.accuracy (the share of tasks solved)",
            )
        ]
    direction = sweeper.get("direction")
    score = last in _SCORES or last.startswith(_SCORE_PREFIXES)
    if score and isinstance(direction, str) and direction == "minimize":
        return [
            Problem(
                "hydra.sweeper.direction",
                f"the search minimizes {objective.metric}, a score that is better when higher: it looks "
                "for the worst trial",
                source_of("hydra.sweeper.direction"),
                fix="set hydra.sweeper.direction=maximize",
                severity="warning",
            )
        ]
    return []
