"""`~hardware`, `~paths`: a config group deleted from the defaults list while the config still needs its
section. The problems that follow name the schema's "required key is missing" blamed on "(schema
default)" with a fix of `set hardware=<value> (see t3rl show --explain )`, or another file's
interpolation (`${paths.models_dir}` in the model's file) as the thing to fix; the cause is the deletion,
and undoing it the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.errors import Problem
from launch.config.optional_groups import OPTIONAL_GROUPS


def deleted_group_problems(
    overrides: Sequence[str], problems: Sequence[Problem], config_dirs: Sequence[str]
) -> list[Problem]:
    """One problem per `~GROUP` override whose section one of `problems` needed; [] when none did."""
    deleted = [
        (override, override[1:].partition("=")[0])
        for override in overrides
        if override.startswith("~") and "." not in override.partition("=")[0]
    ]
    if not deleted:
        return []
    from launch.config.compose import group_options  # lazy: Hydra's config loader, only for `~group`

    found = []
    for override, group in deleted:
        options = group_options(group, config_dirs) if group not in OPTIONAL_GROUPS else []
        needed = next((p for p in problems if _reads(p, group)), None)
        if not options or needed is None:
            continue
        found.append(
            Problem(
                group,
                f"`{override}` deleted the {group} group's section, which this config needs "
                f"({needed.key or 'the config'}: {needed.message})",
                f"override `{override}`",
                f"drop `{override}`; another option instead: {group}=<one of {', '.join(options)}>",
            )
        )
    return found


def _reads(problem: Problem, group: str) -> bool:
    """Whether `problem` is about a key of `group`'s section, or an interpolation of one."""
    key = problem.key
    return key == group or key.startswith(f"{group}.") or f"'{group}." in problem.message
