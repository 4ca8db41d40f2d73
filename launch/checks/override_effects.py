"""Overrides of a command line that do not do what they read as: warnings, since the config they leave
is a valid one (but for two experiments).

- A key (or a group) set twice: the last one wins and the first is silently dropped, so a line built by
  appending to a base command (`… seed=1` then `… seed=2`) runs what its end says, whatever its middle
  says. Two experiments are an error: they read as if they combined, and the first is dropped whole. A
  key set and then deleted (`eval.repeats=5 … ~eval.repeats`, or `~` of a section above it) is set twice
  too: the deletion wins, and the value typed is silently the default.
- `key={}` over a mapping that has entries: Hydra merges an override's mapping into the one there, so the
  empty one changes nothing; whoever typed it meant the mapping emptied.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from launch.config.errors import Problem
from launch.config.fixes import value_at
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.schema_walk import field_names

# Entries of a mapping named in a message; the rest are counted.
_NAMED = 6


def override_warnings(overrides: Sequence[str], data: Mapping[str, Any]) -> list[Problem]:
    """A warning per override a later one replaces, and per `key={}` over a mapping with entries."""
    problems = replaced_overrides(overrides)
    for override in overrides:
        key, assigned, value = override.partition("=")
        key = key.lstrip("+")
        if assigned and not key.startswith(("~", "hydra.")) and value.strip() == "{}" and _entries(data, key):
            problems.append(_empty_merge(key, override, _entries(data, key), data))
    return problems


def replaced_overrides(overrides: Sequence[str]) -> list[Problem]:
    """A problem per override whose setting a later one replaces: the same key (or group) set again
    (`seed=1 … seed=2`, `+seed`/`++seed` alike), or deleted, itself or a section above it (`~key`,
    `~key=value`). A deletion a later override sets again is not one: what was deleted is set."""
    problems = []
    last: dict[str, str] = {}  # key -> the override that set it last
    for override in overrides:
        key, assigned, _ = override.partition("=")
        deletes = key.startswith("~")
        key = key.lstrip("~+")
        if key.startswith("hydra.") or not (assigned or deletes):
            continue
        if deletes:
            for earlier in [k for k in last if k == key or k.startswith(f"{key}.")]:
                problems.append(_deleted(earlier, last.pop(earlier), override))
            continue
        if key in last:
            problems.append(_replaced(key, last[key], override))
        last[key] = override
    return problems


def _deleted(key: str, first: str, later: str) -> Problem:
    return Problem(
        key,
        f"set, then deleted on the command line: `{later}` comes after `{first}`, so `{first}` does "
        f"nothing ({key} takes the value it has without either)",
        f"override `{first}`",
        f"drop `{later}` (or `{first}`, if the deletion was meant)",
        severity="warning",
    )


def _replaced(key: str, first: str, later: str) -> Problem:
    if key in OPTIONAL_GROUPS and first.partition("=")[2] != later.partition("=")[2]:
        # experiments do not combine: the first is dropped whole (Hydra refuses `+experiment` twice; t3rl
        # reads `+experiment` as `experiment`, whose last choice wins)
        return Problem(
            key,
            f"two {key}s on one command line: {key}s do not combine, so `{later}` replaces `{first}` whole "
            "(every setting of the first is dropped)",
            f"override `{first}`",
            f"drop `{first}` (or write an {key} whose defaults list names both)",
        )
    if first.partition("=")[2] == later.partition("=")[2]:
        # One override pasted twice: 'replaced by' itself, with the other as the alternative, said nothing.
        return Problem(
            key,
            f"set twice on the command line to the same value (`{first}`, then `{later}`): the second "
            "changes nothing",
            f"override `{later}`",
            f"drop the second `{later}`",
            severity="warning",
        )
    return Problem(
        key,
        f"set twice on the command line: `{first}` is replaced by `{later}`, the last one",
        f"override `{first}`",
        f"drop `{first}` (or `{later}`, if the first was meant)",
        severity="warning",
    )


def _empty_merge(key: str, override: str, entries: list[str], data: Mapping[str, Any]) -> Problem:
    named = ", ".join(entries[:_NAMED]) + (f" and {len(entries) - _NAMED} more" if entries[_NAMED:] else "")
    if field_names(key, data):  # a section of the schema: its keys are set, not removed
        fix = f"drop `{override}`; a key of the section is set on its own ({key}.{entries[0]}=…)"
    else:  # entries the user names (stages, services, env vars): each is deleted by name
        removals = " ".join(f"~{key}.{entry}" for entry in entries)
        fix = f"to remove entries, delete each: {removals}; else drop `{override}`"
    return Problem(
        key,
        f"`{override}` changes nothing: an override's mapping is merged into the one there, so {named} stay",
        f"override `{override}`",
        fix,
        severity="warning",
    )


def _entries(data: Mapping[str, Any], key: str) -> list[str]:
    """The names of the entries of the mapping at `key` ([] when it is no mapping or has none)."""
    node = value_at(data, key)
    return [str(name) for name in node] if isinstance(node, Mapping) else []
