"""How many points a sweep may expand to, and the smallest narrowing of one that expands to more.

Every point of a sweep is a whole pipeline (its own run dir, its own training job), so a sweep of
thousands is a typo (`seed=range(0,3000)` for `range(0,3)`), not a plan: it is refused at once, before a
point is composed, with the largest dimension cut to what fits. `--max-points` raises the bound for a
sweep that is meant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from launch.config.errors import ConfigError, Problem
from launch.config.override_fixes import as_typed, override_prefix, shell_word
from launch.config.sweep_values import OptionsOf, count, values
from launch.run.sweep_bounds import MOST_POINTS
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override


def check_size(parsed: Sequence[Override], options_of: OptionsOf, max_points: int) -> int:
    """The number of points the overrides expand to; ConfigError when more than `max_points`."""
    sizes = [(override, count(override, options_of)) for override in parsed if override.is_sweep_override()]
    empty = next((override for override, size in sizes if size == 0), None)
    if empty is not None:
        raise ConfigError([_empty_problem(empty)])
    total = math.prod(size for _, size in sizes)
    if total <= max_points:
        return total
    widest, width = max(sizes, key=lambda pair: pair[1])
    others = total // width
    text = as_typed(widest)
    dimensions = " × ".join(str(size) for _, size in sizes)
    # `--max-points N` is a fix only up to the most the option takes.
    more = (
        f"; or --max-points {total} if all {counted(total, 'run')} are meant"
        if total <= MOST_POINTS
        else f" (--max-points takes at most {MOST_POINTS}: a larger sweep is run as several)"
    )
    fits = max_points // others
    if fits >= 1:
        fix = f"{shell_word(_narrowed(widest, fits, options_of))} ({fits * others} points){more}"
    else:
        fix = f"split it into several sweeps of at most {max_points} points each{more}"
    raise ConfigError(
        [
            Problem(
                key=widest.key_or_group,
                message=(
                    f"the sweep expands to {counted(total, 'point')} ({dimensions}), each a whole pipeline "
                    "run; "
                    f"a sweep runs at most {max_points} unless --max-points says more"
                ),
                source=f"override `{text}`",
                fix=fix,
            )
        ]
    )


def _empty_problem(override: Override) -> Problem:
    text = as_typed(override)
    sweep = override.value()
    turned = f"{override_prefix(override)}=range({sweep.start},{sweep.stop},{-sweep.step})"
    return Problem(
        key=override.key_or_group,
        message=f"'{text}' has no values: a range runs from its start towards its stop by its step",
        source=f"override `{text}`",
        fix=f"{shell_word(turned)} (the step the other way)",
    )


def _narrowed(override: Override, keep: int, options_of: OptionsOf) -> str:
    """The override with only its first `keep` values (a range stays a range)."""
    prefix = override_prefix(override)
    if override.is_range_sweep():
        sweep = override.value()
        # round: 0.1 + 3 * 0.1 is 0.4000000000000001 in floats, and the fix is read by a person
        stop = sweep.start + keep * sweep.step
        stop = stop if isinstance(stop, int) else round(stop, 12)
        step = "" if sweep.step == 1 else f",{sweep.step}"
        return f"{prefix}=range({sweep.start},{stop}{step})"
    return f"{prefix}={','.join(values(override, options_of, limit=keep))}"
