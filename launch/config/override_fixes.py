"""Overrides Hydra parses but that do not say what was meant, answered with the override that does.

A sweep (`a=1,2`) in a command that runs once (a list, when the key holds one; else `-m`), a `~key` of a
key the config does not have, and a string field given a word Hydra reads as a number, a boolean or
null (`tracking.project=1e3`, `name=true`). Fixes are written as one shell word each, quoted where the
shell would otherwise split, glob or unquote them.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from types import UnionType
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

from launch.config.errors import ConfigError, Problem, did_you_mean
from launch.config.fixes import quoted

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

# Characters a shell word may hold unquoted (no globbing, splitting or expansion).
_SHELL_SAFE = re.compile(r"[\w@%+=:,./~-]+")


def shell_word(override: str) -> str:
    """An override as one shell word: as is when the shell leaves it alone, else quoted."""
    if _SHELL_SAFE.fullmatch(override):
        return override
    if not re.search(r"[\"$`\\!]", override):
        return f'"{override}"'
    return shlex.quote(override)


def sweep_problem(override: Override, holds_list: bool, *, whole: bool = False) -> Problem:
    """A sweep (`a=1,2`) in a command that runs once: a list when the key holds one, one quoted value when
    the key takes the text whole (`whole`: SLURM's partition list), else `-m`."""
    if override.is_interval_sweep():
        return interval_problem(override)
    text = as_typed(override)
    key = override.key_or_group
    prefix = override_prefix(override)
    # A glob's values are its group's options, which Hydra lists only inside its own multirun.
    # A range's first value only (it may run to a billion); a choice's all, each checked a value.
    values = [] if is_glob(override) else sweep_strings(override, 1 if override.is_range_sweep() else None)
    sweep = f"`t3rl run -m … {text}` (one run per value; `t3rl validate -m` checks every point)"
    simple = override.value_type is not None and override.value_type.name == "SIMPLE_CHOICE_SWEEP"
    if holds_list and simple:
        listed = f"{prefix}=[{','.join(values)}]"
        return Problem(
            key=key,
            message=f"'{text}' is a sweep in Hydra's syntax (one run per value), and {key} holds a list",
            source=f"override `{text}`",
            fix=f"{shell_word(listed)} (a list); or sweep it with {sweep}",
        )
    one = f"; or pick one value: {shell_word(f'{prefix}={values[0]}')}" if values else ""
    if whole:
        as_one = shell_word(f"{prefix}={quoted(text.partition('=')[2])}")
        return Problem(
            key=key,
            message=f"'{text}' is a sweep in Hydra's syntax (one run per value), and {key} takes the "
            "text with its commas as one value",
            source=f"override `{text}`",
            fix=f"{as_one} (one value, quoted for Hydra); or sweep it with {sweep}{one}",
        )
    return Problem(
        key=key,
        message=f"'{text}' is a sweep (several values); this command runs once",
        source=f"override `{text}`",
        fix=f"add -m to sweep it: {sweep}{one}",
    )


def sweep_strings(override: Override, limit: int | None = None) -> list[str]:
    """The first `limit` values (all with None) of a discrete sweep, as override value strings; ConfigError
    when it has none or Hydra cannot list them (`choice(1, choice(2))`: OmegaConf refuses the inner sweep
    as a value). Every reader of a sweep's values lists them here."""
    from itertools import islice  # lazy: only for a sweep

    endless = range_problem(override)
    if endless is not None:  # Hydra's iterator would never stop (a step of 0, an infinite bound)
        raise ConfigError([endless])
    try:
        values = list(islice(override.sweep_string_iterator(), limit))
    except (ValueError, TypeError) as error:  # OmegaConf's ValidationError is a ValueError
        raise ConfigError([no_values_problem(override, str(error).splitlines()[0])]) from None
    # `shuffle()`: Hydra's parser takes a sweep of nothing (an empty range has its fix: the step turned)
    if not values and limit != 0 and not override.is_range_sweep():
        raise ConfigError([no_values_problem(override, "it lists none")])
    return values


def range_problem(override: Override) -> Problem | None:
    """A range sweep no one can list: a step of zero, or a bound or step that is no finite number (Hydra
    lists `range(0,inf)` forever); None for any other override."""
    if not override.is_range_sweep():
        return None
    sweep = override.value()
    if not all(math.isfinite(number) for number in (sweep.start, sweep.stop, sweep.step)):
        why = "its start, stop and step must be finite numbers"
    elif sweep.step == 0:
        why = "a step of 0 never reaches the stop"
    elif not math.isfinite((sweep.stop - sweep.start) / sweep.step):
        why = "it holds more values than a number can count"
    else:
        return None
    return _unlistable(
        override,
        f"is no range a sweep can run through: {why}",
        "a finite range",
        "range(<start>,<stop>,<step>)",
    )


def no_values_problem(override: Override, why: str) -> Problem:
    """A sweep with no value a run can take: each value is one point (one run), and it lists none."""
    message = f"lists no value a run can take ({why}): each value of a sweep is one run"
    return _unlistable(override, message, "list plain values", "<a>,<b>")


def _unlistable(override: Override, message: str, instead: str, value: str) -> Problem:
    """A sweep refused before its values are listed; the fix drops it, or writes it as `instead` says."""
    text = as_typed(override)
    return Problem(
        key=override.key_or_group,
        message=f"'{text}' {message}",
        source=f"override `{text}`",
        fix=f"drop `{text}` (the value the config has stays); or {instead}: "
        f"{override_prefix(override)}={value}",
    )


def is_glob(override: Override) -> bool:
    """`key=glob(...)`: a sweep over the options of a config group that the pattern matches."""
    return override.value_type is not None and override.value_type.name == "GLOB_CHOICE_SWEEP"


def as_typed(override: Override) -> str:
    """The override as the user typed it (its key when Hydra kept no line)."""
    return override.input_line or override.key_or_group


def override_prefix(override: Override) -> str:
    """What stands before the `=` as the user typed it (`+experiment`, `model@x`, `seed`)."""
    return as_typed(override).split("=", 1)[0]


def interval_problem(override: Override) -> Problem:
    """`interval(a,b)` outside a search: its two ends listed, or the search that samples it."""
    text = as_typed(override)
    sweep = override.value()
    prefix = override_prefix(override)
    ends = ",".join(_number(end) for end in (sweep.start, sweep.end))
    return Problem(
        key=override.key_or_group,
        message=(
            f"'{text}' is a search range (Optuna samples it under +hparams_search=<name>); "
            "a sweep (-m) runs listed values and has none to list"
        ),
        source=f"override `{text}`",
        fix=(
            f"list values: {shell_word(f'{prefix}={ends}')}; or search it: "
            f"+hparams_search=<name> with {shell_word(text)} (docs/tutorials/sweeps.md)"
        ),
    )


def _number(value: float) -> str:
    """Hydra reads interval ends as floats; 3.0 of an integer field reads back as 3."""
    return str(int(value)) if float(value).is_integer() else str(value)


def holds_list(key: str, data: Mapping[str, Any]) -> bool:
    """True when `key` of the composed `data` is a list, or its schema field is one."""
    from launch.config.schema_walk import model_at  # lazy: only a sweep in a single run gets here

    node: Any = data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if isinstance(node, list):
        return True
    parent, _, leaf = key.rpartition(".")
    model = model_at(parent, data)
    field = model.model_fields.get(leaf) if model is not None else None
    if field is None:
        return False
    members = get_args(field.annotation) if get_origin(field.annotation) in (Union, UnionType) else ()
    return any(get_origin(t) in (list, tuple, set, frozenset) for t in (field.annotation, *members))


def nothing_to_delete(key: str, text: str, siblings: Sequence[str]) -> Problem:
    """`~key` of a key the config does not have: the one meant, when a sibling is close, else drop it."""
    parent, _, leaf = key.rpartition(".")
    guess = did_you_mean(leaf, siblings)
    where = f"under '{parent}'" if parent else "at the top level"
    drop = f"drop `{text}`: without it the config is the same"
    fix = f"~{parent + '.' if parent else ''}{guess}; or {drop}" if guess else drop
    return Problem(key, f"nothing to delete: no key '{leaf}' {where}", f"override `{text}`", fix)


def typed_override(key: str, source: str) -> tuple[str, str] | None:
    """(the `+`s and key, the value's text) of the override `source` names, when it set `key` itself."""
    found = re.fullmatch(r"override `(\+{0,2}" + re.escape(key) + r")=(.*)`", source)
    return (found[1], found[2]) if found else None


def typed_as_scalar(key: str, source: str, value: object) -> Problem | None:
    """A string field given, in an override, a word Hydra reads as a number, a boolean or null (`1e3`,
    `true`, `1.10`): the override again, its value quoted as typed; `null`: the override dropped."""
    typed = typed_override(key, source)
    if typed is None or not isinstance(value, bool | int | float | None):
        return None
    prefix, text = typed
    if value is None:
        # `null` typed for a text that cannot be empty means "no value", seldom the word null (a device,
        # a split): the value the files give it is what is left
        return Problem(
            key, f"{key} takes a string, but `{text}` gives it no value", source, f"drop `{prefix}={text}`"
        )
    kind = {bool: "the boolean", int: "the integer", float: "the float"}[type(value)]
    return Problem(
        key,
        f"{key} takes a string, but Hydra reads `{text}` as {kind} {value!r}",
        source,
        f"{shell_word(f'{prefix}={quoted(text)}')} (quoted for Hydra, and for the shell around it)",
    )
