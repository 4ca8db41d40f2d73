"""A config group given a list of options (`reward=[progress,binary]`): Hydra merges every option listed
into the group's one section, the last winning key by key, so the run took `binary` with whatever of
`progress` it did not set, and `validate` said valid. Every group of t3rl's is one section chosen once:
what was meant is a sweep (`-m reward=progress,binary`) or one option."""

from __future__ import annotations

from collections.abc import Callable

from hydra.core.override_parser.types import Override

from launch.config.errors import Problem
from launch.config.override_fixes import as_typed, override_prefix, shell_word
from t3rl_core.counts import counted


def listed_options(
    parsed: list[Override],
    is_group: Callable[[str], bool],
    options_of: Callable[[str], list[str]] = lambda group: [],
) -> list[Problem]:
    """A problem per override that gives a config group (not one of Hydra's own) a list of options; the
    fixes name only the listed values that are options of the group (`tracking=[0]` names none: its fix
    drops the override)."""
    problems = []
    for override in parsed:
        group = override.key_or_group.split("@")[0]
        value = override.value()
        if not isinstance(value, list) or group.startswith("hydra") or not is_group(group):
            continue
        text, prefix = as_typed(override), override_prefix(override)
        listed = [str(v) for v in value]
        known = options_of(group)
        options = [o for o in listed if o in known] if known else listed
        sweep = shell_word(f"{prefix}={','.join(options)}")
        one = f"; or one: {shell_word(f'{prefix}={options[0]}')}" if options else ""
        fix = (
            f"a run per option: t3rl run -m … {sweep}{one}"
            if options
            else f"drop `{text}` (no item is an option of {group}: {', '.join(known)})"
        )
        problems.append(
            Problem(
                key=group,
                message=f"'{text}' merges {counted(len(listed), 'option')} of config group '{group}' into "
                "one "
                "section (Hydra's list of options); a run takes one option per group",
                source=f"override `{text}`",
                fix=fix,
            )
        )
    return problems
