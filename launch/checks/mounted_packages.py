"""A group option mounted by a defaults list entry at a package that is no section of the config:
`- /model@model2: qwen3_8b` in an experiment of one's own.

The option's keys land under `model2`, refused as an unknown key; the refusal was blamed on the option's
own file (conf/model/qwen3_8b.yaml, "rename `model2:` to `model:`"), which writes no such key and is t3rl's.
The key is the entry's package: refused there, set in the file whose entry mounts it, at its line, with the
entry that chooses the option where the group's section is as the fix.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from launch.checks.hollow_options import _option_file
from launch.config.errors import Problem

# "conf/model/qwen3_8b.yaml (chosen by experiment/mount2.yaml)": an option a file's defaults list chose.
_CHOSEN = r"^(?P<option>\S+) \(chosen by (?P<by>[\w/.-]+)\.yaml\)$"


def mounted_package_problems(problems: Sequence[Problem], config_dirs: Sequence[str]) -> list[Problem] | None:
    """The unknown-key refusals at the top level whose key is the package a chosen file's entry mounts a group
    at, each at that entry; None when there is none."""
    found, changed = [], False
    for problem in problems:
        # a top-level name only: a section below one (`stages.train.curriculum`) is unknown there when the
        # section above changed kind (`stages.train.kind=eval`), which is that key's refusal
        unknown = problem.message.startswith("unknown key ") and "." not in problem.key
        moved = _at_the_entry(problem, config_dirs) if unknown else None
        found.append(moved or problem)
        changed = changed or moved is not None
    return found if changed else None


def _at_the_entry(problem: Problem, config_dirs: Sequence[str]) -> Problem | None:
    chosen = re.match(_CHOSEN, problem.source)
    group, _, option = chosen["by"].partition("/") if chosen else ("", "", "")
    path = _option_file(group, option, config_dirs) if chosen else None
    if path is None:
        return None
    for number, text in enumerate(_lines(path), 1):
        entry = re.match(r"\s*-\s*((?:override\s+)?/?([\w/]+)@([\w.]+)\s*:\s*([\w.-]+))", text)
        if entry is None or entry[3] != problem.key:
            continue
        mounted, option = entry[2].replace("/", "."), entry[4]
        where = f"{path}:{number}"
        return problem.replace(
            message=f"{where}: `- {entry[1]}` mounts config group '{mounted}' at '{problem.key}', which is "
            f"no section of the config: its option's keys landed there ({problem.message})",
            source=str(path),
            fix=f"in {where}, write `- override /{mounted}: {option}` for `- {entry[1]}` (the group's own "
            "section)",
        )
    return None


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
