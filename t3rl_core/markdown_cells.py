"""Markdown tables t3rl writes (report.md, sweep.md) built from text it does not choose: a category is a
hub dataset's `task` column, a reason quotes a file or an override, a sweep point's error is a
multi-line message. A `|` in such text opened a column, and a line break ended the row mid-cell, so the
table's columns shifted under their headers. Every cell passes `cell`: one line, each pipe escaped."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Every character str.splitlines breaks at (a renderer ends the row at most of them).
_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
# A pipe, with the backslashes before it (doubled, so that they stay text and the pipe stays escaped).
_PIPE = re.compile(r"(\\*)\|")


def one_line(text: object) -> str:
    """`text` with each run of line breaks written as one space."""
    return _BREAKS.sub(" ", str(text))


def cell(text: object) -> str:
    """`text` as one table cell: on one line, its pipes escaped (`\\|` shows a `|` in the cell)."""
    return _PIPE.sub(lambda found: found[1] * 2 + "\\|", one_line(text))


def table(header: Iterable[object], rows: Iterable[Iterable[object]]) -> list[str]:
    """A Markdown table's lines: the header, its rule and one line per row, every cell through `cell`."""
    names = [cell(name) for name in header]
    return [
        "| " + " | ".join(names) + " |",
        "|" + "|".join("---" for _ in names) + "|",
        *("| " + " | ".join(map(cell, row)) + " |" for row in rows),
    ]
