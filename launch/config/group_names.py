"""A config group named where a key was expected: `+experimnt=quickstart` is read as the top-level key
`experimnt`, which no schema field is near but the group `experiment` is.

The first name of an override is either a top-level key or a config group; a misspelt one is answered
with the nearer of the two, and a group with the override that chooses the option nearest the value
typed (`+experiment=quickstart`), not with a key the value cannot go to. The groups and their options
come from the caller (`launch.config.compose` reads them from the search path).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from launch.config.errors import did_you_mean
from launch.config.optional_groups import OPTIONAL_GROUPS


def nearest_group_choice(
    name: str,
    value: object,
    keys: Collection[str],
    groups: Sequence[str],
    options_of: Callable[[str], Sequence[str]],
) -> str | None:
    """The override choosing the group nearest to `name` (`+experiment=quickstart`), when a group is
    nearer to it than any of the top-level `keys` and is not one of them (`model` is both: the key's
    fix says the same); None otherwise."""
    meant = did_you_mean(name.lstrip("+~"), [*groups, *keys])
    if meant is None or meant in keys or meant not in groups:
        return None
    options = list(options_of(meant))
    typed = "" if value is None else str(value)
    option = typed if typed in options else did_you_mean(typed, options)
    prefix = "+" if meant in OPTIONAL_GROUPS else ""
    return f"{prefix}{meant}={option}" if option else f"{prefix}{meant}=<{'|'.join(options)}>"


def group_choice_fix(choice: str) -> str:
    """The fix of a misspelt key that meant the group `choice` chooses (`+experiment=quickstart`)."""
    return f"did you mean the config group '{choice.lstrip('+').partition('=')[0]}'? {choice}"


def group_meant(folder: str, groups: Sequence[str]) -> str | None:
    """The config group among `groups` a folder of one's config dir is misnamed for (`experiments`,
    `Experiment`, `experimet` for experiment), or None: the one reading of such a folder, for a refused
    option (group_dir_misnamed) and for `t3rl ls`, which listed it as a group."""
    return next(
        (
            g
            for g in groups
            if g != folder
            and (folder.lower().rstrip("s") == g.lower() or did_you_mean(g, [folder]) == folder)
        ),
        None,
    )
