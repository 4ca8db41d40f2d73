"""An option of a group whose files are written at the root of the config (`# @package _global_`: an
experiment, a search) whose header Hydra did not read: the file's keys landed under the group's name
(`experiment.name`, `experiment.stages`) and the schema refused `experiment` at the top level, with a fix
that chose the experiment again. The header is missing, misspelt (`_global`, `@package: _global_`), not
among the comment lines at the top (a description first, or after `defaults:`) or hidden by a UTF-8
byte-order mark an editor wrote. One problem per such file, whose fix puts the header first."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from launch.config.errors import Problem
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.provenance import Provenance

# The groups whose options carry `# @package _global_` (conf/config.yaml lists them after `_self_`).
GLOBAL_GROUPS = OPTIONAL_GROUPS
HEADER = "# @package _global_"
_BOM = "\ufeff"
# A line that means to be a package header, however it is spelt.
_MEANT = r"^\s*#\s*@?\s*package\b"
# Hydra's reading: the header lines are the `# @…` lines before the first other non-blank line.
_HEADER_LINE = r"^\s*#\s*@"
# Takes the mark away, puts the header first (`i` runs before line 1 may be deleted) and deletes every
# other line meant as one; GNU sed.
_SED = (
    r"sed -i -e '1i {header}' -e '1s/^\xEF\xBB\xBF//'"
    r" -e '/^[[:space:]]*#[[:space:]]*@\?[[:space:]]*package/d' {file}"
)


def with_header_fixes(problems: list[Problem], provenance: Provenance) -> list[Problem]:
    """Problems of keys a global group's file put under a package: one problem per such file instead."""
    out: list[Problem] = []
    seen: set[str] = set()
    for problem in problems:
        file = _file_of(problem, provenance)
        cause = _header_cause(file) if file is not None else None
        if cause is None or file is None:
            out.append(problem)
            continue
        if file in seen:
            continue
        seen.add(file)
        top = problem.key.partition(".")[0]
        # sed edits lines, and an empty file has none: its `1i` wrote nothing and the fix failed again.
        empty = os.path.getsize(file) == 0
        command = (
            f"echo '{HEADER}' > {shlex.quote(file)}"
            if empty
            else _SED.format(header=HEADER, file=shlex.quote(file))
        )
        fix = f"make `{HEADER}` its first line: {command}"
        message = (
            f"{file} {cause}, so its keys landed under '{top}' (an option of group "
            f"'{Path(file).parent.name}' sets keys of the whole config)"
        )
        out.append(Problem(top, message, file, fix))
    return out


def _file_of(problem: Problem, provenance: Provenance) -> str | None:
    """The file of a global group that set the unknown top-level key `problem` is about."""
    if not re.match(r"unknown key '[^']+' at the top level", problem.message):
        return None
    origin = provenance.origin(problem.key)
    if origin is None or origin.source.startswith("override"):
        return None
    file = Path(origin.source)
    return origin.source if file.parent.name in GLOBAL_GROUPS and file.is_file() else None


def _header_cause(file: str) -> str | None:
    """Why Hydra did not read `file`'s global header; None when it did (or the file cannot be read)."""
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith(_BOM):
        return f"starts with a byte-order mark (U+FEFF), which hides its `{HEADER}` line from Hydra"
    lines = [line.strip() for line in text.splitlines()]
    header = []
    for line in lines:
        if not line:
            continue
        if not re.match(_HEADER_LINE, line):
            break
        header.append(line)
    if any(line.lstrip("#").split() == ["@package", "_global_"] for line in header):
        return None
    meant = [line for line in lines if re.match(_MEANT, line)]
    if not meant:
        return f"has no `{HEADER}` line"
    if meant[0] in header or meant[0].lstrip("#").split() != ["@package", "_global_"]:
        return f"says `{meant[0]}`, which Hydra does not read as `{HEADER}`"
    return (
        f"has its `{HEADER}` line after other lines: Hydra reads it among the comment lines at the top only"
    )
