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

from t3rl_core.finite import finite_real, shown

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
