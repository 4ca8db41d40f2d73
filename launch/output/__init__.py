"""What t3rl commands print: rich's console where rich styles or lays out what it prints, else a
`PlainConsole` (launch.output.plain), which prints the same text without importing rich (most of a cold
`t3rl validate`'s printing cost: docs/explanation/performance.md, issue 26 row 4). `TextTable`
(launch.output.table) is a table either prints; `launch.output.markup` reads and escapes rich's console
markup without rich.
"""

from __future__ import annotations

import builtins
import os
import sys
from typing import TYPE_CHECKING, Any

from launch.output.plain import PlainConsole

if TYPE_CHECKING:
    from rich.console import Console


def console(*, stderr: bool = False, **options: Any) -> Console | PlainConsole:
    """`rich.console.Console(stderr=stderr, **options)`, or the PlainConsole standing for it when rich
    would not style sys.stderr or sys.stdout (`styled`)."""
    if styled(sys.stderr if stderr else sys.stdout):
        from rich.console import Console  # lazy: rich, only for output it styles

        return Console(stderr=stderr, **options)
    return PlainConsole(stderr=stderr, **options)


def styled(stream: Any) -> bool:
    """Whether rich's Console would write terminal output to `stream` (rich's own rule: TTY_COMPATIBLE
    1/0, else FORCE_COLOR set and not empty, else the stream's isatty(); a notebook is rich's too)."""
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    if "FORCE_COLOR" in os.environ:
        return os.environ["FORCE_COLOR"] != ""
    if hasattr(builtins, "get_ipython") or os.environ.get("DATABRICKS_RUNTIME_VERSION"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def rich_of(printer: Console | PlainConsole) -> Console:
    """The rich Console a console stands for (for views drawn with rich's Live and Progress: sweeps)."""
    return printer.rich() if isinstance(printer, PlainConsole) else printer
