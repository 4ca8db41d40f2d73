"""Check a built slime argv against the option strings slime and Megatron really accept.

slime parses with `parse_known_args` (slime notes §6), so a typo, a removed flag or a stray value
(`--colocate true`) would be dropped without a word. Every argv t3rl builds goes through
`check_argv` before it is written anywhere; any unknown flag, flag without its value, or token that
belongs to no flag is a config error that names it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from launch.config.errors import ConfigError, Problem, did_you_mean
from launch.plan.slime_option_table import MEGATRON, SGLANG, SLIME, Arity

# argparse reads "-1" and "-0.5" as values, not as options, when no option looks like a number.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+([eE][-+]?\d+)?$|^-\d+[eE][-+]?\d+$")


@lru_cache(maxsize=1)
def known_options() -> dict[str, Arity]:
    """Every accepted option string → the number of value tokens it takes."""
    table: dict[str, Arity] = {}
    for source in (MEGATRON, SLIME, SGLANG):
        for arity, names in source.items():
            for name in names.split():
                table[name] = arity
    return table


def is_flag(token: str) -> bool:
    return token.startswith("-") and not _NEGATIVE_NUMBER.match(token)


@dataclass(frozen=True)
class ArgvIssue:
    """One problem of an argv: the token, its position and what is wrong."""

    index: int
    token: str
    message: str


def argv_issues(argv: Sequence[str]) -> list[ArgvIssue]:
    """Unknown flags, flags missing their values, and value tokens no flag consumes."""
    table = known_options()
    issues: list[ArgvIssue] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if not is_flag(token):
            issues.append(
                ArgvIssue(i, token, "a value that follows no flag taking one (slime would ignore it)")
            )
            i += 1
            continue
        name, eq, _ = token.partition("=")
        arity = table.get(name)
        if arity is None:
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
            if arity != 1:
                issues.append(ArgvIssue(i, token, "only single-value options may use the --flag=value form"))
            i += 1
            continue
        values = list(_values(argv, i + 1))
        wanted = {0: (0, 0), 1: (1, 1), 3: (3, 3), "+": (1, None), "*": (0, None)}[arity]
        low, high = wanted
        taken = len(values) if high is None else min(len(values), high)
        if taken < low:
            issues.append(ArgvIssue(i, name, f"takes {_describe(arity)} but got {len(values)}"))
        i += 1 + taken
    return issues


def _values(argv: Sequence[str], start: int) -> Iterator[str]:
    for token in argv[start:]:
        if is_flag(token):
            return
        yield token


def _describe(arity: Arity) -> str:
    return {0: "no value", 1: "one value", 3: "three values", "+": "one or more values", "*": "any values"}[
        arity
    ]


def check_argv(argv: Sequence[str], *, key: str, source: str = "") -> None:
    """Raise a ConfigError naming every bad token of `argv` (built for config key `key`)."""
    issues = argv_issues(argv)
    if issues:
        raise ConfigError(
            [
                Problem(
                    key=key,
                    message=f"slime argv token {issue.index} '{issue.token}': {issue.message}",
                    source=source,
                    fix="remove or correct it (extra_args, hardware.env_vars or the model's flags); "
                    "if slime really accepts it, add it to launch/plan/slime_option_table.py",
                )
                for issue in issues
            ]
        )
