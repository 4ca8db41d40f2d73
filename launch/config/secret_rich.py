"""Rich's text masked before rich lays it out.

The stream under every CLI output (`launch.config.secrets.ScrubbingStream`) sees what rich rendered:
a value rich folded inside a table cell is interleaved with the other cells of its lines, and no
scrub of the rendered lines reads it back. Every string rich renders (printed, a table cell, a panel's
body, markup included) passes `Console.render_str`; `scrub_rich(scrub)` makes that scrub it first
(`launch.config.secrets.scrub_standard_streams` passes its `scrub_text`).

The same hook turns rich's emoji codes off unless a print asks for them: t3rl prints values, paths and
commands, in which `:fire:` is text (rich would print 🔥), and the table of every code rich loads for
the replacement costs a cold `t3rl validate` ~11 M instructions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console


def scrub_rich(scrub: Callable[[str], str]) -> None:
    """From now on, every string a rich Console of this process renders goes through `scrub` first
    (once)."""
    original = Console.render_str
    if getattr(original, "scrubs", False):
        return

    def render_str(self: Console, text: str, **options: Any) -> Any:
        if options.get("emoji") is None:
            options["emoji"] = False
        return original(self, scrub(text), **options)

    render_str.scrubs = True  # type: ignore[attr-defined]
    Console.render_str = render_str  # type: ignore[method-assign]
