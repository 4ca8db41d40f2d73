"""`python -m t3rl_core.X --help` for the modules the docs tell users to run that read their own argv.

A module parsing its arguments by hand read `--help` as its first argument's value (`data.check` as a
directory, `lifetime` as a command to exec): every such module asks `asked(...)` first, so `--help`
(or `-h`) as the first argument prints its usage line and its docstring on stdout and exits 0, as the
modules built on argparse do. Only the first argument is read: `lifetime -- cmd --help` passes the
command's own `--help` on.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence

HELP_FLAGS = ("-h", "--help")


def asked(args: Sequence[str], usage: str, doc: str | None) -> bool:
    """True, the usage and `doc` printed on stdout, when the first of `args` asks for help."""
    if not args or args[0] not in HELP_FLAGS:
        return False
    sys.stdout.write(f"{usage}\n\n{inspect.cleandoc(doc or '')}\n")
    return True
