"""Two ways a pasted command line reaches t3rl as an override Hydra cannot parse, each answered with the
arguments to type instead (launch.config.override_syntax asks before it offers to quote the value,
which would keep the mistake inside the value):

- typographic quotes (“42”, ‘a b’) from a page, a chat or a word processor: Hydra reads straight quotes
  only; the fix drops them, or straightens them where the value needs its quotes;
- several overrides in one argument (`'+experiment=quickstart model=qwen3_8b'`, `"$OVERRIDES"`): the
  quotes kept the shell from splitting them; the fix gives them apart.
"""

from __future__ import annotations

import re

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from launch.config.override_fixes import shell_word

_CURLY = {"“": '"', "”": '"', "„": '"', "«": '"', "»": '"', "‘": "'", "’": "'", "‚": "'"}
# An override's start: a dotted key (a group's `@package` too) after an optional + or ++, then '='; or a
# deletion, ~ and a key.
_OVERRIDE_START = re.compile(r"^(?:~[A-Za-z_][\w.@/-]*(?:=|$)|(?:\+{1,2})?[A-Za-z_][\w.@/-]*=)")
_CURLY_WHY = "typographic quotes, pasted from a page: Hydra reads straight ones only"
_JOINED_WHY = "overrides in one argument: the quotes around them kept the shell from splitting them"


def parses(override: str) -> bool:
    """Whether Hydra's grammar reads `override`."""
    try:
        OverridesParser.create().parse_override(override)
    except HydraException:
        return False
    return True


def only_typographic_quotes(item: str) -> bool:
    """Whether every character of `item` that is not ASCII is a typographic quote (`seed=“7”`)."""
    return not item.isascii() and all(c.isascii() or c in _CURLY for c in item)


def pasted_fix(item: str) -> str | None:
    """The arguments to type instead of `item`, and why, for the two mistakes above; else None."""
    if any(mark in item for mark in _CURLY):
        dropped = item.translate({ord(mark): None for mark in _CURLY})
        straight = item.translate({ord(mark): value for mark, value in _CURLY.items()})
        for fixed in (dropped, straight):
            if parses(fixed):
                return f"{shell_word(fixed)} ({_CURLY_WHY})"
        return None
    parts = item.split()
    if len(parts) > 1 and all(_OVERRIDE_START.match(p) and parses(p) for p in parts):
        given = " ".join(shell_word(p) for p in parts)
        return f"{given} ({len(parts)} {_JOINED_WHY})"
    return None
