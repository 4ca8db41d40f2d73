"""Check a built slime argv against the options slime and Megatron really accept.

slime parses with `parse_known_args` (slime notes §6), so a typo, a removed flag or a stray value
(`--colocate true`) would be dropped without a word. Every argv t3rl builds goes through
`check_argv` before it is written anywhere; any unknown flag, flag without its value, token that
belongs to no flag, flag given twice (argparse keeps the last silently) or value the option's type
function or choices reject is a config error that names it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache

from launch.config.argv_tokens import argv_flags as argv_flags
from launch.config.argv_tokens import is_flag, without_flag
from launch.config.errors import ConfigError, Problem, did_you_mean
from launch.config.fixes import list_override
from launch.plan.option_types import value_problem
from launch.plan.slime_option_table import OPTIONS, Option
from launch.plan.slime_sglang_options import SGLANG_OPTIONS
from t3rl_core.fields import SLIME_SAMPLING_OPTIONS
from t3rl_core.records import Record


@lru_cache(maxsize=1)
def known_options() -> dict[str, Option]:
    """Every accepted option string → who defines it, its nargs, type function and choices."""
    return {**OPTIONS, **SGLANG_OPTIONS}


class ArgvIssue(Record):
    """One problem of an argv: the token, its position and what is wrong."""

    index: int
    token: str
    message: str


def argv_issues(argv: Sequence[str]) -> list[ArgvIssue]:
    """Unknown or repeated flags, missing or rejected values, and value tokens no flag consumes."""
    table = known_options()
    issues: list[ArgvIssue] = []
    seen: dict[str, int] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if not is_flag(token):
            issues.append(
                ArgvIssue(i, token, "a value that follows no flag taking one (slime would ignore it)")
            )
            i += 1
            continue
        name, eq, inline = token.partition("=")
        option = table.get(name)
        if name in seen:
            message = f"given twice (also at token {seen[name]}; argparse keeps the last)"
            issues.append(ArgvIssue(i, name, message))
        seen.setdefault(name, i)
        if option is None:
            hint = did_you_mean(name, table)
            issues.append(
                ArgvIssue(
                    i,
                    name,
                    "not an option of slime or Megatron" + (f" (did you mean {hint}?)" if hint else ""),
                )
            )
            i += 1 + len(list(_values(argv, i + 1)))
            continue
        if eq:
            if option.nargs != 1:
                issues.append(ArgvIssue(i, token, "only single-value options may use the --flag=value form"))
            issues += _value_issues(i, name, option, [inline])
            i += 1
            continue
        values = list(_values(argv, i + 1))
        low, high = _bounds(option.nargs)
        taken = len(values) if high is None else min(len(values), high)
        if taken < low:
            issues.append(ArgvIssue(i, name, f"takes {_describe(option.nargs)} but got {len(values)}"))
        issues += _value_issues(i, name, option, values[:taken])
        i += 1 + taken
    return issues


def _bounds(nargs: int | str) -> tuple[int, int | None]:
    if isinstance(nargs, int):
        return nargs, nargs
    return {"?": (0, 1), "+": (1, None), "*": (0, None)}[nargs]


def _value_issues(index: int, name: str, option: Option, values: Sequence[str]) -> list[ArgvIssue]:
    """Each value run through the option's declared type function and choices, as argparse would."""
    issues = []
    field = SLIME_SAMPLING_OPTIONS.get(name)
    for value in values:
        problem = value_problem(option.type, option.choices, value)
        if problem is None and field is not None:
            # lazy: the runtime's sampling type, only for an argv that sets one of its fields
            from t3rl_core.engines.base import SamplingParams

            try:  # the runtime's own kind of the field the value becomes (an empty stop string)
                SamplingParams(**{field: (value,)})
            except ValueError as refused:
                problem = f"{refused} (t3rl's rollout reads it as SamplingParams.{field})"
        if problem is not None:
            issues.append(ArgvIssue(index, name, problem))
    return issues


def _values(argv: Sequence[str], start: int) -> Iterator[str]:
    for index in range(start, len(argv)):  # not a slice: a copy of the rest of the argv per flag
        token = argv[index]
        if is_flag(token):
            return
        yield token


def _describe(nargs: int | str) -> str:
    named = {0: "no value", 1: "one value", "?": "at most one value", "+": "one or more values"}
    return named.get(nargs, "any values" if nargs == "*" else f"{nargs} values")


def check_argv(
    argv: Sequence[str], *, key: str, source: str = "", extra: Sequence[str] = (), extra_key: str = ""
) -> None:
    """Raise a ConfigError naming every bad token of `argv` (built for config key `key`); a token of the
    pass-through flags `extra` (set at `extra_key`) is blamed there, and its fix drops it."""
    issues = argv_issues(argv)
    if issues:
        raise ConfigError([_argv_problem(issue, key, source, extra, extra_key) for issue in issues])


def _argv_problem(issue: ArgvIssue, key: str, source: str, extra: Sequence[str], extra_key: str) -> Problem:
    message = f"slime argv token {issue.index} '{issue.token}': {issue.message}"
    flag = issue.token.partition("=")[0]
    if extra_key and any(f == flag for _, f, _ in argv_flags(extra)):
        rest = without_flag(extra, flag)
        return Problem(key=extra_key, message=message, source="", fix=f"set {list_override(extra_key, rest)}")
    if extra_key and not is_flag(issue.token) and issue.token in extra:
        # a value of the pass-through flags that no flag takes (`['']`, a line of text): the key typed it
        rest = list(extra)
        rest.remove(issue.token)
        return Problem(key=extra_key, message=message, source="", fix=f"set {list_override(extra_key, rest)}")
    return Problem(
        key=key,
        message=message,
        source=source,
        fix="remove or correct it (extra_args, hardware.env_vars or the model's flags); "
        "if slime really accepts it, regenerate launch/plan/slime_option_table.py "
        "(scripts/gen_slime_option_table.py)",
    )
