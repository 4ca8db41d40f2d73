"""A file of a config dir that an earlier entry of the search path hides: `my_conf/experiment/quickstart.yaml`
beside t3rl's own `quickstart`. Hydra takes the first file of a name on the search path (t3rl's `conf/`,
then each `--config-dir` in order), so `+experiment=quickstart` composed t3rl's file, validated, and the
user's file was never read; `t3rl ls` listed t3rl's option only. Hiding is declared by the search path
itself, so it is found from the files, whatever group or name they have."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from launch.config.errors import Problem
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.search_path import roots
from t3rl_core.records import Record


class Hidden(Record):
    """`own`, a file of a config dir, is never read: `first`, earlier on the search path, has its name."""

    own: Path
    first: Path
    # The option's config path, e.g. "experiment/quickstart".
    option: str


def hidden_files(config_dirs: Sequence[str]) -> list[Hidden]:
    """Every option file of a config dir that an earlier search-path entry has too, in search order."""
    found = roots([os.path.abspath(os.path.expanduser(d)) for d in config_dirs])
    if not found:
        return []
    dirs = [Path(d) for d in found]
    hidden: list[Hidden] = []
    for position, root in enumerate(dirs[1:], start=1):
        for own in sorted(root.rglob("*.yaml")):
            relative = own.relative_to(root)
            if relative.parent == Path("."):  # the primary config.yaml, not an option of a group
                continue
            first = next((d / relative for d in dirs[:position] if (d / relative).is_file()), None)
            if first is not None:
                hidden.append(Hidden(own, first, relative.with_suffix("").as_posix()))
    return hidden


def hidden_option_problems(config_dirs: Sequence[str], sources: Iterable[str]) -> list[Problem]:
    """One problem per file of a config dir whose option this config composed from the earlier file
    instead (`sources`: the files that set the config's keys, as provenance shows them)."""
    if not config_dirs:
        return []
    used = {os.path.realpath(source) for source in sources}
    return [
        _problem(h)
        for h in hidden_files(config_dirs)
        if os.path.realpath(h.first) in used and not _same_file_or_bytes(h.own, h.first)
    ]


def _same_file_or_bytes(own: Path, first: Path) -> bool:
    """Whether the hidden file says what the one read says: nothing of it is lost. `--config-dir conf`
    (t3rl's own config dir given as one) or a copy of it to edit a few files gave a problem for every
    file this config composed, each with the fix to rename t3rl's own file (a `mv` inside conf/)."""
    try:
        return own.samefile(first) or own.read_bytes() == first.read_bytes()
    except OSError:
        return False


def _problem(hidden: Hidden) -> Problem:
    group, _, name = hidden.option.rpartition("/")
    renamed = hidden.own.with_name(_free_name(hidden.own))
    choose = f"+{group}={renamed.stem}" if group in OPTIONAL_GROUPS else f"{group}={renamed.stem}"
    own, first = shown_path(hidden.own), shown_path(hidden.first)
    message = (
        f"{own} is never read: {first} has the same name, comes first on "
        f"the search path (t3rl's conf/, then each --config-dir in order) and is the '{name}' this config "
        f"composed for config group '{group}'"
    )
    fix = (
        f"give yours a name of its own: mv {shlex.quote(own)} {shlex.quote(shown_path(renamed))}"
        f" and choose it with {choose}"
    )
    return Problem(group.replace("/", "."), message, own, fix)


def _free_name(own: Path) -> str:
    """`my_<name>.yaml`, or with a number when that is taken too."""
    candidate, number = f"my_{own.stem}", 2
    while (own.parent / f"{candidate}.yaml").exists():
        candidate, number = f"my_{own.stem}{number}", number + 1
    return f"{candidate}.yaml"


def shown_path(path: Path) -> str:
    """A path as people find it: relative to the working directory when below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
