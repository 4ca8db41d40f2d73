"""A defaults-list entry of a config file of one's own written in a form Hydra reads otherwise than
meant. Hydra reads an entry of a file in a group (`experiment/mine.yaml`) relative to that group, so
`- override model: x` is an override of `experiment/model`, `- env: x` adds the option x of a group
`experiment/env`, `- override /env x` (no ':') names a config `override /env x` of the file's own
group, and `- self` a config `self`. Its refusals then blame something else: "Could not override
'experiment/model@model'" was answered "'experiment/mine' is not a config group" with the fix "did you
mean 'experiment'?", and `- env: x` or `- self` after an override "move the override below", which does
not compose either. Every such refusal is located in the file ("In 'experiment/mine': …"), so the file's
entries are read here, and the first one in a misread form is the problem, with the entry as meant."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from launch.config.defaults_order import raw_defaults
from launch.config.errors import Problem, did_you_mean
from launch.config.search_path import display_path

# Hydra's refusals name the config they were raised in first: "In 'experiment/mine': Could not
# override …" or "In experiment/mine: Override … is defined before …" (hydra-core 1.3).
_LOCATED = re.compile(r"In '?(?P<config>[\w./-]+)'?: ")
# The words a defaults-list entry may start with (hydra-core 1.3).
_KEYWORDS = ("override", "optional")


@dataclass(frozen=True)
class Misread:
    """An entry as written, the entry as meant, and why Hydra reads it otherwise."""

    written: str
    meant: str
    why: str


def entry_meant(
    entry: Any,
    own_group: str,
    is_group: Callable[[str], bool],
    groups: Iterable[str],
    chosen_by_primary: Iterable[str],
) -> Misread | None:
    """The entry `entry` (a defaults-list item as YAML reads it) of a file in group `own_group` as meant,
    or None when it is read as written. `groups` are the top-level config groups, `chosen_by_primary`
    those the primary config's defaults list chooses already."""
    if isinstance(entry, str):
        text = entry.strip()
        if text != "_self_" and re.fullmatch(r"_*self_*", text):
            return Misread(
                text, "_self_", "the file's own keys are the entry `_self_`, with both underscores"
            )
        head, _, tail = text.partition(" ")
        if head in ("override", "optional") and tail and ":" not in tail and " " in tail.strip():
            target, _, option = tail.strip().partition(" ")
            return Misread(
                text,
                f"{head} {target}: {option.strip()}",
                "without ':' the whole line is read as the name of a config of the file's own group",
            )
        return None
    if not isinstance(entry, dict) or len(entry) != 1:
        return None
    ((key, value),) = entry.items()
    if not isinstance(key, str) or not isinstance(value, str):
        return None
    written = f"{key}: {value}"
    word, space, rest = key.partition(" ")
    if space and word not in _KEYWORDS:
        keyword = did_you_mean(word, _KEYWORDS)
        if keyword is not None:
            return Misread(
                written, f"{keyword} {rest.strip()}: {value}", f"'{word}' is no word of a defaults list"
            )
    overriding = key.startswith("override ")
    target = key.removeprefix("override ").strip()
    group, at, package = target.partition("@")
    name = group.lstrip("/")
    if not name or (is_group(f"{own_group}/{name}") and not group.startswith("/")):
        return None  # a group below the file's own: read as written
    suffix = f"{at}{package}"
    if not is_group(name):
        guess = did_you_mean(name, groups)
        if guess is None:
            return None
        return Misread(
            written,
            f"{'override ' if overriding else ''}/{guess}{suffix}: {value}",
            f"there is no config group '{name}'",
        )
    primary = set(chosen_by_primary)
    if not overriding and not at and name in primary:
        return Misread(
            written,
            f"override /{name}: {value}",
            f"config group '{name}' is chosen already by the primary config: another option replaces it "
            "with `override`",
        )
    if not group.startswith("/"):
        return Misread(
            written,
            f"{'override ' if overriding else ''}/{name}{suffix}: {value}",
            f"in a file of group '{own_group}' a group without a leading '/' is read as "
            f"'{own_group}/{name}', which does not exist",
        )
    return None


def misread_entry(message: str, loader: Any, groups: list[str]) -> Problem | None:
    """The problem of a Hydra refusal located in a config file whose defaults list holds an entry in a
    misread form (see the module's docstring); None when the refusal names no file or the file's entries
    are read as written."""
    found = _LOCATED.match(message)
    if found is None or "/" not in found["config"]:
        return None  # the primary config: its entries are at the top already
    config = found["config"]
    loaded = loader.repository.load_config(config)
    if loaded is None:
        return None
    file = display_path(loaded.path, config)
    primary = loader.repository.load_config("config")
    chosen = [] if primary is None else _groups_listed(raw_defaults(display_path(primary.path, "config")))
    own_group = config.rpartition("/")[0]
    from launch.config import hydra_internals  # lazy: Hydra is loaded already when it refused

    def is_group(name: str) -> bool:
        return hydra_internals.group_exists(loader, name)

    for entry in raw_defaults(file):
        misread = entry_meant(entry, own_group, is_group, groups, chosen)
        if misread is not None:
            return Problem(
                key="defaults",
                message=f"{file} lists `- {misread.written}`, which Hydra reads otherwise than meant: "
                f"{misread.why}",
                source=file,
                fix=f"in {file}'s defaults list, write `- {misread.meant}` for `- {misread.written}`",
            )
    return None


def _groups_listed(entries: list[Any]) -> list[str]:
    """The top-level groups a defaults list chooses (`model: x`, `optional local@_global_: default`)."""
    out = []
    for entry in entries:
        if isinstance(entry, dict) and len(entry) == 1:
            key = str(next(iter(entry)))
            out.append(
                key.removeprefix("optional ").removeprefix("override ").strip().lstrip("/").partition("@")[0]
            )
    return out
