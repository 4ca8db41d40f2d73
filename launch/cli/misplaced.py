"""A command line whose command is not first: `t3rl +experiment=quickstart validate`, or
`t3rl --config-dir mine -m run …` (a command's options given to `t3rl` itself), no command at all
(`t3rl +experiment=quickstart`), or a word that is an option of `t3rl` (`t3rl help`, `t3rl version`,
`t3rl help run`).

Click answered "No such command '+experiment=quickstart'" or "No such option: --config-dir", which
says what is wrong but not the line that works; this reads the arguments as the command line meant.
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Sequence

# Words typed as commands that are options of `t3rl` itself.
_OPTION_WORDS = {"help": "--help", "version": "--version"}


def misplaced(args: Sequence[str], commands: Collection[str], own_options: Collection[str]) -> str | None:
    """What is wrong with `t3rl ARGS` and the line to type instead, when the command stands after
    arguments that belong to it, is missing before overrides, or a word stands for one of `t3rl`'s
    options; None when none of these."""
    if not args:
        return None
    first = args[0]
    if first == "help" and len(args) > 1 and args[1] in commands:  # `t3rl help run`, `t3rl help runs show`
        words = [args[1], *(arg for arg in args[2:3] if arg.isalpha())]  # `runs show`, not an override
        return f"a command's help is its --help: t3rl {shlex.join(words)} --help"
    if first in _OPTION_WORDS:
        return f"that is an option of t3rl: t3rl {_OPTION_WORDS[first]}"
    if first in commands or first in own_options or first.partition("=")[0] in own_options:
        return None
    at = next((i for i, arg in enumerate(args) if arg in commands), None)
    if at is not None:
        return f"the command comes first: t3rl {shlex.join([args[at], *args[:at], *args[at + 1 :]])}"
    if "=" in first or first.startswith(("+", "~")):
        return f"overrides follow a command: t3rl run {shlex.join(args)} (or plan, validate, show)"
    return None
