"""A config group's option written as a plain key of an experiment file of one's own: `model: qwen3_8b`
or `hardware: h100x8` beside `name:` instead of `- override /model: qwen3_8b` in its defaults list.

The section became the word: the schema said `hardware: Input should be a valid dictionary … (got
'h100x8')` with "see the field's comment", and `model: qwen3_8b` broke the env's interpolation
`${model.parsers.think_tags}`, blamed on conf/env/bfcl_multi_turn.yaml. The declaration that decides is
the search path: a key at the place a group's options are mounted (the group's name, or its
`# @package`) whose value is one of that group's options meant the option. Only the experiment files
of the config dirs the command line chooses (and their bases there) are read: t3rl's own are tested."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from launch.config.errors import Problem
from launch.config.fixes import value_at
from launch.config.hidden_options import shown_path
from launch.config.optional_groups import OPTIONAL_GROUPS
from t3rl_core.yaml_text import safe_load

# `+experiment=NAME`, `experiment=NAME`, `++experiment=NAME`: an option chosen on the command line.
_CHOICE = re.compile(r"^\+{0,2}(?P<group>\w+)=(?P<option>[\w.-]+)$")


def group_key_problems(overrides: Sequence[str], config_dirs: Sequence[str]) -> list[Problem]:
    """One problem per group option an own experiment file (or its own base) sets as a plain key."""
    own = list(_own_files(overrides, config_dirs)) if config_dirs else []
    if not own:
        return []
    from launch.config import compose  # lazy: Hydra's config loader, only on an error's path

    mounted = {
        _package(group, options, config_dirs): (group, options)
        for group in compose.groups(config_dirs)
        if group not in OPTIONAL_GROUPS and (options := compose.group_options(group, config_dirs))
    }
    problems: list[Problem] = []
    for file, data in own:
        for package, (group, options) in mounted.items():
            value = value_at(data, package)
            if isinstance(value, str) and value in options:
                problems.append(_problem(file, package, group, value))
    return problems


def _own_files(overrides: Sequence[str], config_dirs: Sequence[str]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """The global-group files of the config dirs the command line chooses, then their bases there."""
    todo = [
        (m["group"], m["option"])
        for o in overrides
        if (m := _CHOICE.match(o)) and m["group"] in OPTIONAL_GROUPS
    ]
    seen: set[Path] = set()
    while todo:
        group, option = todo.pop(0)
        file = next(
            (f for d in config_dirs if (f := Path(d).expanduser() / group / f"{option}.yaml").is_file()), None
        )
        if file is None or file in seen:
            continue
        seen.add(file)
        try:
            data = safe_load(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # said by the composition's own problem
        if not isinstance(data, dict):
            continue
        yield file, data
        defaults = data.get("defaults")
        todo += [(group, entry) for entry in defaults or [] if isinstance(entry, str) and entry != "_self_"]


def _package(group: str, options: list[str], config_dirs: Sequence[str]) -> str:
    """Where the group's options are mounted: the `# @package` of the first of its files that reads
    (an unreadable one is the composition's own problem), else the group's name."""
    from launch.config import compose  # lazy: Hydra's config loader, only on an error's path

    for option in options:
        try:
            return compose.option_package(f"{group}/{option}", config_dirs) or group
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
    return group


def _problem(file: Path, package: str, group: str, option: str) -> Problem:
    shown = shown_path(file.resolve())
    written = f"{package}: {option}" if "." not in package else f"{package} = {option}"
    message = (
        f"{shown} sets `{written}` as a value: section '{package}' became the word '{option}', which is an "
        f"option of config group '{group}'; an option is chosen in the defaults list, where it brings its "
        f"whole section"
    )
    fix = (
        f"in {shlex.quote(shown)}, delete `{written}` and add `- override /{group}: {option}` at the end of "
        f"its defaults list (after its base experiment); on the command line: {group}={option}"
    )
    return Problem(package, message, shown, fix)
