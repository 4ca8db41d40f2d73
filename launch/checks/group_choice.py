"""A section given a word that names an option of the config group mounted there (`env.user=llm`,
where the `user_sim` group's files carry `# @package env.user`) meant that option: its fix is the group
choice (`user_sim=llm`), which brings the option's whole section, not a key of it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from launch.config.errors import Problem

_OVERRIDE = re.compile(r"^override `(?P<key>[\w.]+)=(?P<value>[\w-]+)`$")


def with_group_fixes(problems: list[Problem], config_dirs: Sequence[str]) -> list[Problem]:
    """Each problem raised by an override `key=word` where `key` is a group's package and `word` one of
    its options gets the group choice as its fix."""
    return [_chosen(p, config_dirs) or p for p in problems]


def _chosen(problem: Problem, config_dirs: Sequence[str]) -> Problem | None:
    found = _OVERRIDE.match(problem.source)
    if found is None or not problem.key.startswith(found["key"]):
        return None
    group = mounted_group(found["key"], found["value"], config_dirs)
    if group is None:
        return None
    choice, typed = f"{group}={found['value']}", f"{found['key']}={found['value']}"
    fix = f"set {choice} instead of `{typed}` (the {group} group's option, mounted at {found['key']})"
    return replace(problem, key=found["key"], fix=fix)


def mounted_group(package: str, option: str, config_dirs: Sequence[str]) -> str | None:
    """The config group whose option `option` is a file mounted at `package`, if any."""
    from launch.config import compose  # lazy: Hydra's config loader, only on a schema error's path

    for group in compose.groups(config_dirs):
        if option in compose.group_options(group, config_dirs) and (
            compose.option_package(f"{group}/{option}", config_dirs) == package
        ):
            return group
    return None
