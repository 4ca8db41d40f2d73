"""rich's Console for output rich would not style (a pipe, a file, CI's log), without importing rich.

What rich prints there is text: markup tags dropped, escapes undone, a few control characters removed,
nothing wrapped with `soft_wrap`. `PlainConsole.print` writes that text itself for strings printed soft
wrapped and for `TextTable`s; anything else (another renderable, a tab to expand, a wrapped print,
`rule`, any other attribute of a Console) goes to a rich Console made on first use with the same
options, which prints it as before. Every string is scrubbed of secrets before its markup is read, as
rich's own strings are (launch.config.secret_rich), and then again by the stream under it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from launch.config.secrets import scrub_text, scrub_texts
from launch.output.markup import pictured, plain, removed
from launch.output.table import TextTable

if TYPE_CHECKING:
    from rich.console import Console

# Characters of `sep` and `end` left to rich (a tab anywhere is: rich expands it to its column's stop).
RICH_ONLY = "\t\a\b\v\f\r"


class PlainConsole:
    """`rich.console.Console(stderr=…, file=…, soft_wrap=…, markup=…, **options)` where rich would not
    style the output; the same text, printed without rich for what t3rl prints most."""

    def __init__(
        self,
        *,
        stderr: bool = False,
        file: Any = None,
        soft_wrap: bool = False,
        markup: bool = True,
        **options: Any,
    ) -> None:
        self.stderr = stderr
        self.soft_wrap = soft_wrap
        self._file = file
        self._markup = markup
        self._options = options
        self._rich: Console | None = None

    @property
    def file(self) -> Any:
        """Where it prints: the stream given, else sys.stderr or sys.stdout as they are now (rich's rule)."""
        return self._file or (sys.stderr if self.stderr else sys.stdout)

    def print(
        self,
        *objects: Any,
        sep: str = " ",
        end: str = "\n",
        markup: bool | None = None,
        soft_wrap: bool | None = None,
        emoji: bool | None = None,
        **options: Any,
    ) -> None:
        """rich's `Console.print`."""
        if len(objects) == 1 and isinstance(objects[0], TextTable):
            self._write("".join(line + "\n" for line in objects[0].lines(self._texts)))
            return
        text = self._plain(objects, sep, end, markup, soft_wrap, emoji, options)
        if text is None:
            self.rich().print(
                *objects, sep=sep, end=end, markup=markup, soft_wrap=soft_wrap, emoji=emoji, **options
            )
        else:
            self._write(text)

    def _plain(
        self,
        objects: tuple[Any, ...],
        sep: str,
        end: str,
        markup: bool | None,
        soft_wrap: bool | None,
        emoji: bool | None,
        options: dict[str, Any],
    ) -> str | None:
        """The text rich prints for these strings, or None for a print left to rich (`highlight` and
        `style` change nothing in text that is not styled)."""
        soft = self.soft_wrap if soft_wrap is None else soft_wrap
        if emoji or not soft or not options.keys() <= {"highlight", "style"}:
            return None
        if not all(isinstance(o, str) for o in objects) or any(c in sep + end for c in RICH_ONLY):
            return None
        read = self._markup if markup is None else markup
        text = sep.join(self._text(o) if read else removed(pictured(scrub_text(o))) for o in objects) + end
        return None if "\t" in text else text

    def rich(self) -> Console:
        """The rich Console this one stands for (made on first use: importing rich is most of its cost)."""
        if self._rich is None:
            from rich.console import Console  # lazy: rich, only for what this console does not print itself

            self._rich = Console(
                stderr=self.stderr,
                file=self._file,
                soft_wrap=self.soft_wrap,
                markup=self._markup,
                **self._options,
            )
        return self._rich

    def __getattr__(self, name: str) -> Any:
        # Any other attribute of a Console (rule, width, is_terminal, …): rich's.
        return getattr(self.rich(), name)

    def _text(self, markup: str) -> str:
        return plain(pictured(scrub_text(markup)))

    def _texts(self, markups: list[str]) -> list[str]:
        # One scrub of a table's strings joined (scrub_texts: the same as one by one).
        return [plain(pictured(text)) for text in scrub_texts(markups)]

    def _write(self, text: str) -> None:
        file = self.file
        if file is not None:  # rich writes nowhere then (`t3rl … >&-`)
            file.write(text)
            file.flush()
