"""Compositions Hydra refuses for a mistake about where configs live or how a group is chosen, read as
what the user meant: a misspelt `--config-dir`, a config file or a group's own directory given as one,
and a group added with `+`/`++` that the defaults list already holds (Hydra: "Multiple values for
reward", "user_sim appears more than once in the final defaults list", "force-add of config groups is not
supported").
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence

from hydra.core.override_parser.types import Override
from hydra.errors import MissingConfigException

from launch.config.errors import Problem, did_you_mean
from launch.config.group_names import group_meant
from launch.config.optional_groups import OPTIONAL_GROUPS


def nearest_dir_fix(missing: str) -> str:
    """`--config-dir` of the existing directory nearest to a misspelt one (`~/cfgs` for `~/cgfs`), or
    of the directory above a config file given for one (`DIR/experiment/mine.yaml`)."""
    generic = "pass an existing directory of config groups (e.g. <dir>/model/my_model.yaml)"
    parent, name = os.path.split(missing)
    if os.path.isfile(missing):
        if not name.endswith((".yaml", ".yml")):  # no config file at all: a data file, a script
            return f"{missing} is no config file; {generic}"
        above, group = os.path.split(parent)
        option = name.removesuffix(".yaml").removesuffix(".yml")
        chosen = f"{'+' if group in OPTIONAL_GROUPS else ''}{group}={option}"
        return f"--config-dir {above} {chosen} (a config dir holds group dirs; a file is chosen by name)"
    above = _from_a_dir_above(missing)
    if above is not None:
        # Typed relative in a subdirectory of where it is (`cd docs` first): as a run dir is (record_files).
        where, meant = above
        return (
            f"did you mean --config-dir {meant}? (a relative path starts from the current directory, "
            f"{os.getcwd()}; or cd {where} first)"
        )
    try:
        siblings = [e.name for e in os.scandir(parent) if e.is_dir()] if os.path.isdir(parent) else []
    except OSError:
        siblings = []
    guess = did_you_mean(name, siblings)
    return f"did you mean --config-dir {os.path.join(parent, guess)}?" if guess else generic


def _from_a_dir_above(missing: str) -> tuple[str, str] | None:
    """(the nearest directory above the current one, the config dir there) from which the path typed
    relative to the current directory is a directory; None when it lies outside it or nowhere above."""
    try:
        here = os.getcwd()
    except OSError:  # the current directory was deleted: nothing is above it
        return None
    relative = os.path.relpath(missing, here)
    if relative.startswith(os.pardir):
        return None
    above = os.path.dirname(here)
    while True:
        candidate = os.path.join(above, relative)
        if os.path.isdir(candidate) and _holds_groups(candidate):
            return above, candidate
        if above == os.path.dirname(above):
            return None
        above = os.path.dirname(above)


def _holds_groups(directory: str) -> bool:
    """Whether `directory` is a config dir: a folder of it named as one of t3rl's groups holds a config
    file (any directory with a YAML file two levels down, `/tmp` among them, is not)."""
    from launch.config.search_path import PACKAGE, package_dir  # lazy: only for a missing config dir

    shipped = package_dir(PACKAGE)
    groups = {e.name for e in os.scandir(shipped) if e.is_dir()} if shipped is not None else set()
    try:
        return any(
            e.is_dir() and e.name in groups and any(f.endswith(".yaml") for f in os.listdir(e.path))
            for e in os.scandir(directory)
        )
    except OSError:
        return False


def group_dir_given(
    error: MissingConfigException, parsed: list[Override], config_dirs: Sequence[str], written: dict[str, str]
) -> Problem | None:
    """`--config-dir DIR/experiment +experiment=mine`: the option is there, but a group's own directory
    was given where the directory above the groups belongs."""
    group, _, option = (error.missing_cfg_file or "").rpartition("/")
    for directory in config_dirs:
        if os.path.basename(directory) == group and os.path.isfile(os.path.join(directory, f"{option}.yaml")):
            text = next((o.input_line for o in parsed if o.key_or_group.split("@")[0] == group), "")
            return Problem(
                key="--config-dir",
                message=f"--config-dir {directory} is the directory of group '{group}'; a config dir "
                f"holds group directories ({group}/{option}.yaml)",
                source=f"--config-dir {directory}",
                fix=f"--config-dir {os.path.dirname(directory)} {written.get(text, text)}".strip(),
            )
    return None


def group_dir_misnamed(
    error: MissingConfigException, parsed: list[Override], config_dirs: Sequence[str]
) -> Problem | None:
    """`mine/experiments/x.yaml` (or `models/`, `Experiment/`) chosen with `--config-dir mine +experiment=x`:
    the file is there, in a folder whose name is no group's, so t3rl's own options were listed as if it
    were not. The folder is named for its group."""
    group, _, option = (error.missing_cfg_file or "").rpartition("/")
    if not group or "/" in group:
        return None
    for directory in config_dirs:
        try:
            folders = [e.name for e in os.scandir(directory) if e.is_dir() and e.name != group]
        except OSError:
            continue
        near = [f for f in folders if group_meant(f, [group]) is not None]
        found = next((f for f in near if os.path.isfile(os.path.join(directory, f, f"{option}.yaml"))), None)
        if found is None:
            continue
        text = next((o.input_line for o in parsed if o.key_or_group.split("@")[0] == group), "")
        file, wrong, right = (
            os.path.join(directory, *parts) for parts in ((found, f"{option}.yaml"), (found,), (group,))
        )
        return Problem(
            key=group,
            message=f"{file} is in folder '{found}', which is no config group: the folders of a config dir "
            f"are named for their groups, so it was not read as an option of '{group}'",
            source=f"override `{text}`" if text else f"--config-dir {directory}",
            fix=f"mv {shlex.quote(wrong)} {shlex.quote(right)}"
            if not os.path.exists(right)
            else f"mv {shlex.quote(file)} {shlex.quote(right)}/",
        )
    return None


def group_added_again(
    message: str, parsed: list[Override], is_group: Callable[[str], bool]
) -> Problem | None:
    """`+reward=binary` for a group the defaults list already chooses (Hydra: "Multiple values for
    reward"), or `++group=x` (Hydra: "force-add of config groups is not supported"): the override that
    chooses the option is the plain one."""
    for override in parsed:
        group = override.key_or_group
        if not (override.is_add() or override.is_force_add()) or not is_group(group):
            continue
        if any(
            said in message
            for said in (
                f"Multiple values for {group}.",
                f"{group} appears more than once in the final defaults list",
                "force-add of config groups",
            )
        ):
            plain = f"{group}={override.input_line.partition('=')[2]}"
            pluses = "++" if override.is_force_add() else "+"
            return Problem(
                key=group,
                message=f"config group '{group}' is in the primary config's defaults list already: an "
                f"option of it is chosen, not added with '{pluses}'",
                source=f"override `{override.input_line}`",
                fix=f"+{plain}" if group in OPTIONAL_GROUPS else f"drop the '{pluses}': {plain}",
            )
    return None


def override_key(override: Override) -> str:
    """The key Hydra matches an override against the defaults list by: `group@package` or `group`."""
    return (
        f"{override.key_or_group}@{override.package}"
        if override.package is not None
        else override.key_or_group
    )


# Hydra: "Could not override 'model@model'.\nDid you mean to override model?" (or "one of a, b?"),
# after "In '<config>': " when a file's defaults list holds the override.
_NO_SUCH_ENTRY = re.compile(
    r"(?:In '(?P<file>[^']+)': )?Could not override '(?P<key>[^']+)'\.\n"
    r"Did you mean to override (?:one of )?(?P<meant>[^?\n]+)\?"
)


def entry_named_otherwise(
    message: str, parsed: list[Override], options: Callable[[str], list[str]]
) -> Problem | None:
    """An override of a group's entry under another name than the defaults list's (`model@model=x` for
    the entry `model`, `model@foo=x`): Hydra names the entry meant; the fix chooses through it, or drops
    the override when the command line chooses that entry already."""
    found = _NO_SUCH_ENTRY.match(message)
    if found is None:
        return None
    key, meant = found["key"], [name.strip() for name in found["meant"].split(",")]
    if found["file"] is not None:
        file = f"{found['file']}.yaml"
        # A file in a group's directory names other groups from the root (`/model`); Hydra names them so.
        group = f"/{meant[0]}" if "/" in found["file"] else meant[0]
        return Problem(
            key=key,
            message=f"the defaults list overrides '{key}', which names no entry of it",
            source=file,
            fix=f"in {file}, write `override {group}: <option>` (the entry's name)",
        )
    override = next((o for o in parsed if override_key(o) == key), None)
    if override is None:
        return None
    value = override.input_line.partition("=")[2]
    chosen = next((o for o in parsed if o is not override and override_key(o) in meant), None)
    known = options(override.key_or_group)
    if chosen is not None:
        fix = f"drop `{override.input_line}` (`{chosen.input_line}` chooses {override_key(chosen)} already)"
    elif value in known:
        fix = f"{meant[0]}={value} instead of `{override.input_line}`"
    else:  # `reward@_global_=nosuch`: the option is no option of the group either
        fix = f"{meant[0]}=<one of {', '.join(known)}> instead of `{override.input_line}`"
    return Problem(
        key=key,
        message=f"'{key}' names no entry of the defaults list (its entry of group "
        f"'{override.key_or_group}' is {' or '.join(repr(m) for m in meant)})",
        source=f"override `{override.input_line}`",
        fix=fix,
    )


# OmegaConf/Hydra: "Could not delete from config. The value of 'seed' is 42 and not 7."
_UNMET = re.compile(r"The value of '[^']*' is (.*) and not (.*)\.$", re.S)


def unmet_condition(override: str, key: str, message: str) -> Problem | None:
    """`~key=value` deletes the key only while it holds that value; `message` said it holds another."""
    other = _UNMET.search(message)
    if other is None:
        return None
    return Problem(
        key,
        f"`{override}` deletes {key} only while it is {other[2]}, but it is {other[1]} here (the value "
        "after `=` is a condition, not what to delete)",
        f"override `{override}`",
        f"drop `{override}`; or `~{key}` instead, to delete it whatever it holds",
    )
