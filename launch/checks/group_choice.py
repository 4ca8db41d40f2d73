"""Config groups and the sections they are mounted at, confused in an override:

- a section given a word that names an option of the config group mounted there (`env.user=llm`, where
  the `user_sim` group's files carry `# @package env.user`) meant that option: its fix is the group
  choice (`user_sim=llm`), which brings the option's whole section, not a key of it;
- a key under a group's name (`user_sim.temperature=0.3`) meant the key of the section the group is
  mounted at: its fix is the same override under the package (`env.user.temperature=0.3`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from launch.config.errors import ConfigError, Problem
from launch.config.fixes import value_at

# _OVERRIDE and _UNDER_GROUP are strings, compiled by `re` (and cached) when first used, not on import: a
# cold `t3rl validate +experiment=stage2_bfcl` never uses them.
_OVERRIDE = r"^override `(?P<key>[\w.]+)=(?P<value>[\w-]+)`$"
_UNDER_GROUP = r"^override `(?P<group>\w+)(?P<rest>\.[^=`]+)=(?P<value>.*)`$"


def with_group_fixes(
    problems: list[Problem], config_dirs: Sequence[str], overrides: Sequence[str] = ()
) -> list[Problem]:
    """Each problem raised by an override `key=word` where `key` is a group's package and `word` one of
    its options gets the group choice as its fix; `overrides`: the command line, for a group an
    experiment's defaults list mounts at `key` (`/curriculum@stages.train.curriculum: bfcl_stage1`)."""
    return [
        _chosen(p, config_dirs, overrides)
        or _added_beside(p, config_dirs, overrides)
        or _misspelt_at_mount(p, config_dirs, overrides)
        or p
        for p in problems
    ]


# group_names.group_choice_fix's words: "did you mean the config group 'curriculum'? curriculum=bfcl_stage2".
_GROUP_MEANT = r"^did you mean the config group '(?P<group>\w+)'\? \+?(?P=group)=(?P<option>[\w.-]+)$"


def _misspelt_at_mount(
    problem: Problem, config_dirs: Sequence[str], overrides: Sequence[str]
) -> Problem | None:
    """`+curriculm=bfcl_stage2`: the group meant is chosen where the experiment mounts it
    (`curriculum@stages.train.curriculum=…`), not at its own name, which the defaults list has no entry
    for (that choice was refused in turn, with the mount as its fix: two steps)."""
    found = re.match(_GROUP_MEANT, problem.fix)
    typed = problem.source.removeprefix("override `").removesuffix("`")
    if found is None or typed not in overrides:
        return None
    from launch.config.compose import compose  # lazy: Hydra's config loader, only on a schema error's path

    try:
        choices = compose([o for o in overrides if o != typed], config_dirs).choices
    except ConfigError:
        return None
    group, option = found["group"], found["option"]
    mounts = [entry for entry, chosen in choices.items() if entry.startswith(f"{group}@") and chosen]
    if group in choices or not mounts:
        return None
    chosen = " or ".join(f"{entry}={option}" for entry in mounts)
    return problem.replace(fix=f"did you mean the config group '{group}'? {chosen}")


# "conf/curriculum/bfcl_stage2.yaml (chosen by override `+curriculum=bfcl_stage2`)": a group added with '+'.
_ADDED = r"\(chosen by override `\+(?P<group>\w+)=(?P<option>[\w.-]+)`\)$"


def _added_beside(problem: Problem, config_dirs: Sequence[str], overrides: Sequence[str]) -> Problem | None:
    """`+curriculum=bfcl_stage2` where the experiment's defaults list mounts the group elsewhere
    (`curriculum@stages.train.curriculum`): '+' added a second copy at the group's own name, which no
    section reads. The choice meant is the option at each mount the config without it chooses."""
    found = re.search(_ADDED, problem.source)
    if found is None or problem.key != found["group"]:
        return None
    from launch.config.compose import compose  # lazy: Hydra's config loader, only on a schema error's path

    group, option = found["group"], found["option"]
    typed = f"+{group}={option}"
    try:
        choices = compose([o for o in overrides if o != typed], config_dirs).choices
    except ConfigError:
        return None
    mounts = [entry for entry, chosen in choices.items() if entry.startswith(f"{group}@") and chosen]
    if not mounts:
        return None
    chosen = " or ".join(f"{entry}={option}" for entry in mounts)
    return problem.replace(
        message=f"`{typed}` adds a second {group} section at '{group}', which nothing reads: this config "
        f"mounts the {group} group at {', '.join(m.partition('@')[2] for m in mounts)}",
        fix=f"set {chosen} instead of `{typed}` (the option chosen at its mount)",
    )


def _chosen(problem: Problem, config_dirs: Sequence[str], overrides: Sequence[str]) -> Problem | None:
    found = re.match(_OVERRIDE, problem.source)
    if found is None or not problem.key.startswith(found["key"]):
        return None
    typed = f"{found['key']}={found['value']}"
    group = mounted_group(found["key"], found["value"], config_dirs)
    if group is not None:
        choice = f"{group}={found['value']}"
    else:  # mounted there by the experiment's defaults list: chosen with the package it gives
        group = _mounted_by_defaults(
            found["key"], found["value"], [o for o in overrides if o != typed], config_dirs
        )
        if group is None:
            return None
        choice = f"{group}@{found['key']}={found['value']}"
    fix = f"set {choice} instead of `{typed}` (the {group} group's option, mounted at {found['key']})"
    return problem.replace(key=found["key"], fix=fix)


def _mounted_by_defaults(
    package: str, option: str, others: Sequence[str], config_dirs: Sequence[str]
) -> str | None:
    """The group whose option the config without the override mounts at `package`, when `option` is one
    of its options too (the section's keys came from `conf/<group>/<its option>.yaml`)."""
    from launch.config import compose  # lazy: Hydra's config loader, only on a schema error's path
    from launch.config.resolved import composed_plain  # lazy: likewise

    try:
        before = composed_plain(others, config_dirs)
    except ConfigError:
        return None
    section = value_at(before.data, package)
    if not isinstance(section, dict) or not section:
        return None
    source = before.provenance.source(f"{package}.{next(iter(section))}")
    loaded = re.search(r"(?:^|/)(\w+)/\w+\.yaml\b", source)
    group = loaded.group(1) if loaded else None
    return group if group and option in compose.group_options(group, config_dirs) else None


def mounted_group(package: str, option: str, config_dirs: Sequence[str]) -> str | None:
    """The config group whose option `option` is a file mounted at `package`, if any."""
    from launch.config import compose  # lazy: Hydra's config loader, only on a schema error's path

    for group in compose.groups(config_dirs):
        if option in compose.group_options(group, config_dirs) and (
            compose.option_package(f"{group}/{option}", config_dirs) == package
        ):
            return group
    return None


def with_package_keys(problems: list[Problem], config_dirs: Sequence[str]) -> list[Problem]:
    """Each unknown top-level key that is a config group's name gets the override under the package its
    options are mounted at as its fix."""
    return [_under_package(p, config_dirs) or p for p in problems]


def _under_package(problem: Problem, config_dirs: Sequence[str]) -> Problem | None:
    found = re.match(_UNDER_GROUP, problem.source)
    if found is None or not problem.message.startswith(f"unknown key '{found['group']}' at the top level"):
        return None
    from launch.config import compose  # lazy: Hydra's config loader, only on a composition error's path

    group = found["group"]
    if group not in compose.groups(config_dirs):
        return None
    packages = {compose.option_package(f"{group}/{o}", config_dirs) for o in compose.group_options(group)}
    if len(packages) != 1 or None in packages:
        return None  # mounted where each experiment says (`/curriculum@stages.<name>.curriculum`)
    package = packages.pop()
    typed = f"{group}{found['rest']}={found['value']}"
    fix = (
        f"set {package}{found['rest']}={found['value']} instead of `{typed}` (the {group} group is "
        f"mounted at {package})"
    )
    return problem.replace(fix=fix)
