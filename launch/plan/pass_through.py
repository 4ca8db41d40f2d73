"""Pass-through argv (`model.architecture.extra_args`) against the argv t3rl derives from the config.

slime parses with argparse, which keeps the last of a repeated flag without a word: an `--lr` in
extra_args silently replaces (or is replaced by) the `--lr` t3rl writes from the curriculum, and the
config then no longer says what runs. A pass-through flag that t3rl derives is refused, naming the key
t3rl derives it from; the fix moves the value there.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.errors import ConfigError, Problem
from launch.config.fixes import list_override
from launch.plan.slime_options import argv_flags


def check_pass_through(derived: Sequence[str], extra: Sequence[str], key: str, stage_key: str) -> None:
    """Raise a ConfigError for every flag of `extra` (config key `key`) that `derived` already sets."""
    made = {flag: values for _, flag, values in argv_flags(derived)}
    problems = []
    for index, flag, values in argv_flags(extra):
        if flag not in made:
            continue
        end = index + (1 if "=" in extra[index] else 1 + len(values))
        rest = [*extra[:index], *extra[end:]]
        from launch.config.slime_flags import owner  # lazy: asked only of a flag passed twice

        field = owner(flag, stage_key)
        theirs = " ".join([flag, *values])
        ours = " ".join([flag, *made[flag]])
        moved = f" {field}={values[0]}" if field and len(values) == 1 else ""
        source = f"from {field}" if field else "itself"
        problems.append(
            Problem(
                key,
                f"'{theirs}' passes through a flag t3rl derives {source} ('{ours}'): argparse would keep "
                "only the last of the two",
                fix=f"set {list_override(key, rest)}{moved}"
                + ("" if moved or not field else f" (then set {field})"),
            )
        )
    if problems:
        raise ConfigError(problems)


def check_groups(groups: dict[str, list[str]], extra: Sequence[str], stage_key: str) -> None:
    """`check_pass_through` of a train job's argv groups, whose model group ends with `extra`."""
    model = groups["model"]
    derived = [
        token
        for name, group in groups.items()
        for token in (group[: len(group) - len(extra)] if name == "model" else group)
    ]
    assert list(model[len(model) - len(extra) :]) == list(extra), "the model group ends with extra_args"
    check_pass_through(derived, extra, "model.architecture.extra_args", stage_key)
