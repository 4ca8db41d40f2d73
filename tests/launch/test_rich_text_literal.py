"""What t3rl prints through rich is the text it was given: an emoji code in a value, a path or a command
(`:fire:`) is printed as written, not as rich's emoji (launch.config.secret_rich), unless a print asks
for emoji itself."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from launch.config.secret_rich import scrub_rich
from launch.config.secrets import scrub_text


def _printed(*renderables: object, **options: object) -> str:
    scrub_rich(scrub_text)  # as the CLI does (patched once per process: the real scrub, not a stand-in)
    out = io.StringIO()
    Console(file=out, width=200).print(*renderables, **options)
    return out.getvalue()


def test_an_emoji_code_in_a_value_is_printed_as_written() -> None:
    assert _printed("run it:  t3rl run env.name=a:fire:b") == "run it:  t3rl run env.name=a:fire:b\n"


def test_an_emoji_code_in_a_table_cell_is_printed_as_written() -> None:
    table = Table("what")
    table.add_row("x:thumbs_up:y")
    assert "x:thumbs_up:y" in _printed(table)


def test_a_print_that_asks_for_emoji_gets_them() -> None:
    assert _printed(":fire:", emoji=True) == "🔥\n"
