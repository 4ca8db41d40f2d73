"""A defaults list that names an `override /GROUP: OPTION` before another entry (`- override /model: x`,
then `- quickstart`): Hydra refuses it ("In experiment/mine: Override 'model : x' is defined before
'experiment@_global_: quickstart'. Overrides must be at the end of the defaults list"), which t3rl
printed as it was, blamed on "(schema default)", without the file or a fix. Read here as the file and
the two entries as written, and the order that composes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from launch.config.errors import Problem
from launch.config.search_path import display_path
from t3rl_core.yaml_text import safe_load

# Hydra's words (hydra/_internal/defaults_list.py, hydra-core 1.3).
_REFUSAL = (
    r"In (?P<config>\S+): Override '(?P<group>[^' ]+) : (?P<option>[^']+)' "
    r"is defined before '(?P<entry>[^']+)'"
)


def override_before_entry(message: str, loader: Any) -> Problem | None:
    """The problem of Hydra's refusal `message` of an override listed too early; None for another."""
    found = re.match(_REFUSAL, message)
    if found is None:
        return None
    config = found["config"]
    loaded = loader.repository.load_config(config)
    file = display_path(loaded.path, config) if loaded is not None else f"{config}.yaml"
    entries = _defaults_of(file)
    override = next((e for e in entries if _overrides(e, found["group"])), None)
    name = found["entry"].rpartition(": ")[2]
    entry = next((e for e in entries if not _is_override(e) and _names(e, name)), name)
    if override is None:
        override = f"override /{found['group']}: {found['option']}"
    return Problem(
        key="defaults",
        message=f"{file} lists `{override}` before `{entry}`: a defaults list takes its `override` "
        "entries after all others (Hydra)",
        source=file,
        fix=f"in {file}'s defaults list, move `- {override}` below `- {entry}`",
    )


def raw_defaults(file: str) -> list[Any]:
    """The file's defaults list as YAML reads it; empty when it cannot be read (Hydra's words stand)."""
    try:
        with open(file, encoding="utf-8") as handle:
            data = safe_load(handle.read())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return []
    defaults = data.get("defaults") if isinstance(data, dict) else None
    return defaults if isinstance(defaults, list) else []


def _defaults_of(file: str) -> list[str]:
    """The file's defaults list entries as one-line texts (`quickstart`, `override /model: qwen3_8b`)."""
    out = []
    for item in raw_defaults(file):
        if isinstance(item, dict) and len(item) == 1:
            ((key, value),) = item.items()
            out.append(f"{key}: {value}")
        elif isinstance(item, str):
            out.append(item)
    return out


def _is_override(entry: str) -> bool:
    return entry.startswith("override ")


def _overrides(entry: str, group: str) -> bool:
    target = entry.removeprefix("override ").partition(":")[0].strip().lstrip("/")
    return _is_override(entry) and target.partition("@")[0] == group


def _names(entry: str, option: str) -> bool:
    return entry.rpartition(": ")[2].strip() == option or entry == option


def entry_choosing(group: str, option: str, chosen: list[str], loader: Any) -> tuple[str, str] | None:
    """(file, entry as written) of the defaults list entry that names `option` of `group`, searched in the
    configs chosen on the command line (`experiment/mine`) and the configs of their group their defaults
    lists name (a base experiment): Hydra names the primary config for an `override` entry ("In 'config':
    Could not find 'model/nope'"), or no file at all ("Multiple values for model"), so t3rl blamed
    config.yaml or "(schema default)" for a line of the user's own experiment."""
    for file in chosen_files(chosen, loader):
        for entry in _defaults_of(file):
            target, _, value = entry.removeprefix("override ").rpartition(":")
            if target.strip().lstrip("/").partition("@")[0] == group and value.strip() == option:
                return file, entry
    return None


def chosen_files(chosen: list[str], loader: Any) -> Iterator[str]:
    """The files of the configs chosen on the command line and of the configs of their own group their
    defaults lists name (a base experiment), each once, the command line's first."""
    queue, seen = list(chosen), set()
    while queue:
        config = queue.pop(0)
        if config in seen:
            continue
        seen.add(config)
        try:
            loaded = loader.repository.load_config(config)
        except Exception:  # a file OmegaConf cannot hold (a null key): the file still is where it is
            found = next((s for s in loader.repository.get_sources() if s.is_config(config)), None)
            if found is not None:
                yield display_path(found.full_path(), config)
            continue
        if loaded is None:
            continue
        file = display_path(loaded.path, config)
        yield file
        for entry in _defaults_of(file):
            if ":" not in entry and entry != "_self_":  # an option of the file's own group
                queue.append(f"{config.rpartition('/')[0]}/{entry}")


_NULL_KEY = r"Incompatible key type 'NoneType'\s+full_key: (?P<key>\S*)"


def null_key(message: str, chosen: list[str], loader: Any) -> Problem | None:
    """A mapping key YAML reads as null (`~: 1`, `null: 1`): OmegaConf refuses it while
    merging ("Incompatible key type 'NoneType'"), which t3rl printed at a key named 'NoneType' with no
    file and no fix. The file is the chosen config whose mapping at that key holds it."""
    found = re.search(_NULL_KEY, message)
    if found is None:
        return None
    key = found["key"]
    for file in chosen_files(chosen, loader):
        try:
            with open(file, encoding="utf-8") as handle:
                node = safe_load(handle.read())
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        for part in key.split(".") if key else []:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and None in node:
            where = key or "the top level"
            return Problem(
                key=where,
                message=f"a key of {where} is null (`~` or `null` unquoted): every key is text",
                source=file,
                fix=f"in {file}, quote the key ('~': …) or give it its name",
            )
    return None


# Hydra's words for a group listed again without `override` (hydra/_internal/defaults_list.py, 1.3).
_MULTIPLE = (
    r"Multiple values for (?P<group>[\w/]+)\. "
    r"To override a value use 'override (?P=group): (?P<option>[^']+)'"
)


def group_listed_again(message: str, chosen: list[str], loader: Any) -> Problem | None:
    """A defaults list entry `- /model: qwen3_8b` (no `override`) for a group the primary config chooses
    already (Hydra: "Multiple values for model. To override a value use 'override model: qwen3_8b'")."""
    found = re.match(_MULTIPLE, message)
    where = found and entry_choosing(found["group"], found["option"], chosen, loader)
    if not found or not where:
        return None
    file, entry = where
    group, option = found["group"], found["option"]
    return Problem(
        key="defaults",
        message=f"{file} lists `{entry}`, but config group '{group}' is chosen already (the primary "
        f"config's defaults list chooses it): an option chosen again replaces it with `override` (Hydra)",
        source=file,
        fix=f"in {file}'s defaults list, write `- override /{group}: {option}` for `- {entry}` (an override "
        "on the command line cannot change a file's defaults list)",
    )
