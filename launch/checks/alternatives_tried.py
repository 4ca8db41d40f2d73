"""Every alternative a fix offers is one the user may apply, so an alternative is tried with the rest of
the line first, as the fix applier would apply it: one the config refuses in turn is not offered, and the
reason it was refused is said instead (was: offered, refused when applied). The trial is one loop; what
differs between its callers is the line an alternative makes and which refusals of that line are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from launch.checks.fix_closure import Refusals, _tried
from launch.config.errors import Problem
from t3rl_core.records import Record

# What an alternative makes: what the message calls it and the command line it gives; None: not tried.
Line = Callable[[str], "Trial | None"]
# The refusals of a trial's line that are the alternative's own (not those the line typed had already).
Own = Callable[[str, list[Problem]], list[Problem]]


class Trial(Record):
    label: str
    line: list[str]


class Tried(Record):
    kept: list[str]  # the alternatives taken (or not tried), in their order
    refused: list[str]  # "<label> is refused in turn at <key>: <message>", one per alternative dropped


def tried(
    alternatives: Sequence[str], line: Line, own: Own, config_dirs: Sequence[str], refusals: Refusals
) -> Tried:
    kept: list[str] = []
    refused: list[str] = []
    for alternative in alternatives:
        trial = line(alternative)
        turn = own(trial.label, _tried(refusals, trial.line, config_dirs)) if trial is not None else []
        if trial is not None and turn:
            refused.append(f"{trial.label} is refused in turn at {turn[0].key}: {turn[0].message}")
        else:
            kept.append(alternative)
    return Tried(kept, refused)
