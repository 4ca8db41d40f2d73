"""A config group removed by a `null` entry of a config file's defaults list (`- override /model: null` in an
experiment of one's own) while the config still needs its section.

On the command line, `model=null` is refused at `model` with "drop that override"; in a file, the missing
section was blamed on whatever read it first (`env.data.think_tags`, whose file interpolates
`${model.parsers.think_tags}`), with "fix the ${...} interpolation" as the fix. The entry is the cause, as a
deletion typed is (`launch.checks.deleted_groups`): refused at the group, set in the file at the entry's
line, with the entry's removal (or an option in its place) as the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from launch.checks.hollow_options import _option_file
from launch.config.errors import Problem

# `experiment=mine`, `+experiment=mine`: a config chosen on the command line whose defaults list is read.
_CHOICE = r"^\+{0,2}(?P<group>[a-z_]\w*)=(?P<option>[\w.-]+)$"


def null_entry_problems(
    problems: Sequence[Problem], overrides: Sequence[str], config_dirs: Sequence[str]
) -> list[Problem] | None:
    """The refusals put as one problem per `null` group entry of a chosen file whose section they are about
    (a key of it refused, or a message naming a key of it); None when there is no such entry."""
    found: list[Problem] = []
    kept = list(problems)
    for file, line, group, entry in _null_entries(overrides, config_dirs):
        # a key of the section itself (`model.parsers…`), not one of another section's of that name
        of_it = re.compile(rf"(?<![\w.]){re.escape(group)}(?![\w])")
        about = [p for p in kept if of_it.match(p.key) or of_it.search(p.message)]
        if not about:
            continue
        kept = [p for p in kept if p not in about]
        where = f"{file}:{line}"
        found.append(
            Problem(
                key=group,
                message=f"{where}: `- {entry}` removes the {group} section, which this config needs "
                f"({about[0].key}: {about[0].message})",
                source=file,
                fix=f"in {where}, delete `- {entry}` (or name one of the {group} group's options there)",
            )
        )
    return [*found, *kept] if found else None


def _null_entries(
    overrides: Sequence[str], config_dirs: Sequence[str]
) -> Iterator[tuple[str, int, str, str]]:
    """(file, line, group, entry as written) of each `null` group entry of the files chosen on the command
    line and of the bases their defaults lists name, each file once."""
    queue = [
        (m["group"], m["option"]) for o in overrides if (m := re.match(_CHOICE, o)) and m["group"] != "hydra"
    ]
    seen: set[Path] = set()
    while queue:
        group, option = queue.pop(0)
        path = _option_file(group, option, config_dirs)
        if path is None or path in seen:
            continue
        seen.add(path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in enumerate(lines, 1):
            nulled = re.match(
                r"\s*-\s*((?:override\s+)?/?([\w/]+)(?:@[\w.]+)?\s*:\s*(?:null|~)\s*)(?:#.*)?$", text
            )
            if nulled:
                yield str(path), number, nulled[2].replace("/", "."), nulled[1].strip()
            base = re.match(r"\s*-\s*([\w.-]+)\s*(?:#.*)?$", text)
            if base and base[1] != "_self_":
                queue.append((group, base[1]))  # an option of the file's own group: a base
