"""The values of a swept override, counted and listed without Hydra's multirun machinery.

Hydra enumerates `glob(...)` only inside its own multirun, whose sweeper holds a config loader; t3rl expands
sweeps itself, so a glob is matched here against the options of its config group. An `interval(...)` has
no values to enumerate: only a search (`+hparams_search=...`) samples it. Ranges are counted by arithmetic,
so `seed=range(0,10000000)` is measured without being listed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from launch.config.errors import ConfigError, Problem
from launch.config.override_fixes import (
    as_typed,
    interval_problem,
    is_glob,
    override_prefix,
    range_problem,
    shell_word,
    sweep_strings,
)
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

# Options of a config group by its name ([] for a key that is no group).
OptionsOf = Callable[[str], Sequence[str]]


def count(override: Override, options_of: OptionsOf) -> int:
    """How many values the swept override runs (1 for a plain one, 0 for an empty range); ConfigError for
    an interval or a glob matching no option."""
    if not override.is_sweep_override():
        return 1
    if override.is_range_sweep():
        endless = range_problem(override)
        if endless is not None:
            raise ConfigError([endless])
        sweep = override.value()
        return max(0, math.ceil((sweep.stop - sweep.start) / sweep.step))
    return len(values(override, options_of, limit=None))


def values(override: Override, options_of: OptionsOf, limit: int | None) -> list[str]:
    """The first `limit` values (all with None) of a swept override, as override value strings."""
    if override.is_interval_sweep():
        raise ConfigError([interval_problem(override)])
    if is_glob(override):
        group = override.key_or_group
        options = list(options_of(group))
        matched = override.value().filter(options)
        if not matched:
            raise ConfigError([_empty_glob_problem(override, options)])
        return matched if limit is None else matched[:limit]
    return sweep_strings(override, limit)


def as_choices(override: Override, options_of: OptionsOf) -> str:
    """A glob written as the plain choice sweep it stands for (`model=qwen3_4b,qwen3_8b`)."""
    return f"{override_prefix(override)}={','.join(values(override, options_of, limit=None))}"


def _empty_glob_problem(override: Override, options: Sequence[str]) -> Problem:
    text = as_typed(override)
    group = override.key_or_group
    if not options:
        return Problem(
            key=group,
            message=f"'{text}' matches options of a config group, and {group} is not a config group",
            source=f"override `{text}`",
            fix=f"list the values to sweep: {group}=<a>,<b> (`t3rl ls` lists the config groups)",
        )
    some = ",".join(options[:2])
    return Problem(
        key=group,
        message=f"'{text}' matches none of the {counted(len(options), 'option')} of {group}: "
        f"{', '.join(options)}",
        source=f"override `{text}`",
        fix=f"{shell_word(f'{override_prefix(override)}={some}')} (options of {group})",
    )
