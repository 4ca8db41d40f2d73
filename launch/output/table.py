"""A table of markup cells that both consoles print: rich's Table on a terminal (`__rich__`, every column
folding its long words), and aligned lines of text elsewhere (`lines`), never wrapped, so a log or a pipe
holds each row whole on one line (grep finds it, a value is never folded between other cells' text)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from t3rl_core.counts import counted

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console, ConsoleOptions
    from rich.table import Table
    from rich.text import Text

# Between two columns of the plain table.
GAP = "  "
# The fewest characters a column of rich's table keeps on a terminal, and the characters each column's
# borders and padding take there ("│ " and " " around it).
MIN_COLUMN = 6
BORDERS = 3


class TextTable:
    """A titled table of markup strings (as rich's `Table(title=…)` with `add_row`)."""

    def __init__(self, title: str, columns: Sequence[str]) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows: list[list[str]] = []

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(
                f"a row of {counted(len(cells), 'cell')} in a table of {counted(len(self.columns), 'column')}"
            )
        self.rows.append(list(cells))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Table | Text]:
        """rich's Table, or on a terminal too narrow for its columns (fewer than MIN_COLUMN characters
        each) one `column: value` line per cell, a row after another: rich folded every cell to a letter
        or two a line there and, at 20 columns, dropped the last column's text."""
        inside = options.max_width - BORDERS * len(self.columns) - 1
        if inside >= MIN_COLUMN * len(self.columns):
            yield self._table()
            return
        from rich.text import Text  # lazy: rich's text, only on a narrow terminal

        title, *cells = (console.render_str(cell) for cell in self._cells())
        yield title
        header, n = cells[: len(self.columns)], len(self.columns)
        for start in range(n, len(cells), n):
            yield Text("")
            for name, value in zip(header, cells[start : start + n], strict=True):
                # a cell of several lines (one per eval stage) goes on under its name, indented
                yield Text.assemble(name.plain, ": ", Text("\n  ").join(value.split("\n")), overflow="fold")

    def _cells(self) -> list[str]:
        return [self.title, *self.columns, *(cell for row in self.rows for cell in row)]

    def _table(self) -> Table:
        from rich.table import Table  # lazy: rich's table, only when a rich console prints this one

        table = Table(title=self.title, title_justify="left")
        for column in self.columns:
            table.add_column(column, overflow="fold")
        for row in self.rows:
            table.add_row(*row)
        return table

    def lines(self, shown: Callable[[list[str]], list[str]]) -> list[str]:
        """The title, the header, a rule under it and one line per row (more for a cell of several
        lines), columns aligned; `shown` gives the text shown for each of the table's markup strings,
        all of them at once (launch.output.plain scrubs them in one go, then drops their tags)."""
        n = len(self.columns)
        texts = shown(self._cells())
        cells = [text.expandtabs().split("\n") for text in texts]
        header, rows = cells[1 : 1 + n], [cells[i : i + n] for i in range(1 + n, len(cells), n)]
        widths = [
            max(_width(line) for cell in column for line in cell)
            for column in zip(header, *rows, strict=True)
        ]
        rule = [["-" * width] for width in widths]
        lines = cells[0]
        for row in (header, rule, *rows):
            for i in range(max(len(cell) for cell in row)):
                parts = [cell[i] if i < len(cell) else "" for cell in row]
                padded = [
                    part + " " * (width - _width(part)) for part, width in zip(parts, widths, strict=True)
                ]
                lines.append(GAP.join(padded).rstrip())
        return lines


def _width(text: str) -> int:
    """Terminal columns `text` takes: wide East Asian characters two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
        for c in text
    )
