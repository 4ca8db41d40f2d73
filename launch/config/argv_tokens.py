"""Reading an argv as argparse does: which tokens are flags, and each flag's values. The plan checks a
built argv with it, and the pre-flight reads pass-through argv in the config with it."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

# argparse reads "-1" and "-0.5" as values, not as options, when no option looks like a number.
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+([eE][-+]?\d+)?$|^-\d+[eE][-+]?\d+$")


def is_flag(token: str) -> bool:
    # The pattern only where it may match (a digit or '.' after the '-'): a plan's checks read each of
    # its argvs' ~250 tokens, most of them flags, several times.
    if not token.startswith("-"):
        return False
    second = token[1:2]
    return not ((second == "." or second.isdecimal()) and _NEGATIVE_NUMBER.match(token))


def argv_flags(argv: Sequence[str]) -> Iterator[tuple[int, str, list[str]]]:
    """(index, flag, its values) of every flag of an argv (`--flag=value` is one token, one value)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if not is_flag(token):
            i += 1
            continue
        name, eq, inline = token.partition("=")
        values = [inline] if eq else []
        j = i + 1
        while not eq and j < len(argv) and not is_flag(argv[j]):
            values.append(argv[j])
            j += 1
        yield i, name, values
        i = j if not eq else i + 1


def flags_on(argv: Sequence[str]) -> dict[str, list[str]]:
    """Flag → its values, for the flags of `argv` that are on: one numeric value 0 (`0`, `0.0`) is off,
    as slime and Megatron read a switch given a number."""
    return {
        name: values for _, name, values in argv_flags(argv) if not (len(values) == 1 and _zero(values[0]))
    }


def _zero(value: str) -> bool:
    try:
        return float(value) == 0
    except ValueError:
        return False


def without_flag(argv: Sequence[str], flag: str, *, prefix: bool = False) -> list[str]:
    """`argv` without every `flag` (with `prefix`: every flag that starts so) and its values."""
    kept: list[str] = []
    skipping = False
    for token in argv:
        if is_flag(token):
            name = token.partition("=")[0]
            skipping = name.startswith(flag) if prefix else name == flag
        if not skipping:
            kept.append(token)
    return kept
