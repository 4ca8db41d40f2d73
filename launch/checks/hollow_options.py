"""A config group's option whose file gives its section nothing: empty (or comments only), an empty mapping,
or a YAML list or single value where a file holds a mapping of keys.

An option is a section: choosing it (`reward=mine`) replaces the group's section with the file's keys. An
empty file gave the schema an empty section, refused for its missing `name` with "see the field's comment";
a list was refused with the file's path as the key and "write it as `key: value` lines", neither naming the
choice that brought the file nor a fix that validates. Here the choice is the cause: refused at the group,
set in the override that chose the option, with the override dropped as the fix (the group's option without
it, which the experiment chose) and the file's own fix beside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from launch.config.errors import Problem

# `reward=mine`, `+reward=mine`, `curriculum@stages.train.curriculum=mine`: a group choice on the line.
_CHOICE = r"^(?P<plus>\+{0,2})(?P<group>[a-z_][\w/]*)(?:@(?P<package>[\w.]+))?=(?P<option>[\w.-]+)$"


def hollow_option_problems(
    problems: Sequence[Problem], overrides: Sequence[str], config_dirs: Sequence[str]
) -> list[Problem] | None:
    """The refusals with each group option chosen on the command line whose file holds no section put as
    one problem at the group; None when no chosen option's file is hollow (the problems stand)."""
    hollow = list(_hollow_choices(overrides, config_dirs))
    if not hollow:
        return None
    found, kept = [], list(problems)
    for text, section, file, what in hollow:
        about = [p for p in kept if _about(p, section, file)]
        if not about:
            continue  # the empty option left a section the schema takes: nothing refused for it
        kept = [p for p in kept if p not in about]
        found.append(
            Problem(
                key=section,
                message=(
                    f"{file} (chosen by `{text}`) is {what}, where an option's file holds a mapping of keys "
                    f"(its section): {section} was left with none of the keys it needs"
                ),
                source=f"override `{text}`",
                fix=f"drop `{text}`; or write the {section} section's keys in {file} as `key: value` lines",
            )
        )
    return [*found, *kept] if found else None


def _hollow_choices(
    overrides: Sequence[str], config_dirs: Sequence[str]
) -> Iterator[tuple[str, str, str, str]]:
    """(override, the section it fills, its option's file, what the file holds) of each hollow choice."""
    from t3rl_core.yaml_text import safe_load  # lazy: only on a refusal's path

    for text in overrides:
        choice = re.match(_CHOICE, text)
        if choice is None:
            continue
        file = _option_file(choice["group"], choice["option"], config_dirs)
        if file is None or _global(choice["group"]):
            continue  # an option of a global group (an experiment, a search) has no section: its own refusals
        try:
            data = safe_load(file.read_text(encoding="utf-8"))
        except Exception:  # unreadable or not YAML: the composition's own problem says so
            continue
        what = _hollow(data)
        if what is not None:
            yield text, choice["package"] or choice["group"].replace("/", "."), str(file), what


def _global(group: str) -> bool:
    """The group's shipped options write keys of the whole config (`# @package _global_`)."""
    from launch.config.search_path import PACKAGE, package_dir  # lazy: only for a refused choice

    # t3rl's own configs by their installed package (`conf` imports only with the checkout on sys.path).
    shipped_dir = package_dir(PACKAGE)
    for shipped in sorted((shipped_dir / group).glob("*.yaml")) if shipped_dir is not None else []:
        return shipped.read_text(encoding="utf-8").lstrip().startswith("# @package _global_")
    return False


def _hollow(data: object) -> str | None:
    if data is None:
        return "empty"
    if isinstance(data, dict):
        return "an empty mapping" if not data else None
    return "a YAML list" if isinstance(data, list) else f"a single value ({data!r})"


def _option_file(group: str, option: str, config_dirs: Sequence[str]) -> Path | None:
    """The file Hydra reads for the option: the config dirs' first, then t3rl's conf/."""
    from launch.config.search_path import PACKAGE, package_dir  # lazy: only for a refused choice

    # t3rl's own configs by their installed package (`conf` imports only with the checkout on sys.path).
    for directory in [*config_dirs, *map(str, filter(None, [package_dir(PACKAGE)]))]:
        path = Path(directory).expanduser() / group / f"{option}.yaml"
        try:
            if path.is_file():
                return path
        except OSError:  # a name longer than a file's may be (ENAMETOOLONG): no option's file
            continue
    return None


def _about(problem: Problem, section: str, file: str) -> bool:
    """The refusal is the hollow option's: at its file, or at its section or a key of it."""
    named = {_real(problem.key), _real(re.sub(r":\d+$", "", problem.source.split(" (chosen by")[0]))}
    return _real(file) in named or problem.key == section or problem.key.startswith(f"{section}.")


def _real(path: str) -> str:
    return str(Path(path).expanduser().resolve()) if path.endswith(".yaml") else path
