"""The verdict fields of an episode's outcome: what a world says of how well the episode went.

`accuracy` (the world's own verdict: 1 solved, 0 not, tau2's reward in between) and `progress` (the
share of turns solved) are read beside the reward: the eval's success and progress come from them, and
the progress and binary rewards read `accuracy`. Each is a share, so it is None (no verdict) or a finite
real number in [0, 1]. A world reporting anything else (a text, a list, NaN, 5) is the world's bug: the
episode loop records it as the world's failure and leaves the field out of the outcome. Before, a text
or a list raised out of the eval's record (the whole eval stopped for one episode), and NaN counted as
the agent's wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t3rl_core.finite import NotFinite, finite_real, outside_real, shown

VERDICT_FIELDS = ("accuracy", "progress")


def verdict_fields_problem(outcome: Mapping[str, Any]) -> str | None:
    """What is wrong with the outcome's verdict fields (None when each is absent, None or a share)."""
    for name in VERDICT_FIELDS:
        value = outcome.get(name)
        if value is None:
            continue
        if not finite_real(value) or not 0 <= value <= 1:
            got = f"{type(value).__name__} {shown(value)}"
            return f"outcome {name} must be a share in [0, 1] (or None), got {got}"
    return None


# A world's own scores: `reward` (a verifiers rubric's weighted score, the sum of an OpenEnv episode's
# step rewards), which the env_score reward trains on, and `metrics`, its named scores logged beside it.
SCORE_FIELDS = ("reward", "metrics")


def score_fields_problem(outcome: Mapping[str, Any]) -> str | None:
    """What is wrong with the outcome's score fields (None when each is absent or fits): `reward` a
    finite real number (a bool is a check, not a score), `metrics` a mapping of names to finite real
    numbers (a bool counts as a share). A world's sum of finite step rewards can overflow (two of 1e308
    are inf), and a plugin world's outcome is whatever it returns: the reward that reads them named a
    world's non-finite score as its own failure, or took a text through float()."""
    if "reward" in outcome:
        try:
            outside_real(outcome["reward"], "outcome reward")
        except NotFinite as exc:
            return str(exc)
    metrics = outcome.get("metrics")
    if metrics is None:
        return None
    if not isinstance(metrics, Mapping):
        return f"outcome metrics must map names to numbers, got {type(metrics).__name__} {shown(metrics)}"
    for name, value in metrics.items():
        if not isinstance(name, str):
            return f"outcome metrics are named by texts, got {type(name).__name__} {shown(name)}"
        try:
            outside_real(value, f"outcome metric {name!r}", bools=True)
        except NotFinite as exc:
            return str(exc)
    return None
