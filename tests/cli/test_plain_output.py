"""Output rich would not style (a pipe, a file, CI's log) is printed without rich (launch.output): the
same text rich prints there, every string scrubbed of secrets before its markup is read as rich's are;
a cold plan or validate piped never imports rich, and a terminal still gets rich's rendering."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.errors import MarkupError
from rich.markup import escape as rich_escape
from rich.markup import render as rich_render

from launch.config import secrets
from launch.config.secret_rich import scrub_rich
from launch.output import styled
from launch.output.markup import escape, plain
from launch.output.plain import PlainConsole
from launch.output.table import TextTable
from tests.architecture.cold_command import probed

REPO = Path(__file__).resolve().parents[2]

# Markup made of the pieces that matter to rich's grammar: tags (styles, closings, handlers, parameters),
# backslashes, brackets that are not tags, control characters, tabs, wide and combining characters.
PIECES = st.sampled_from(
    [
        "[bold]", "[/bold]", "[/]", "[red]", "[/red]", "[bold red]", "[/red bold]", "[ bold]", "[bold ]",
        "[link=http://h/x]", "[/link]", "[@click]", "[#ff0000]", "[x]", "[/x]", "[multi_turn_base]",
        "\\", "\\\\", "[", "]", "[1]", "[A]", "\\[", " ", "a", "é", "界", "e\u0301", ":fire:", "\t", "\r",
        "\a", "\x1b[31m", "\n", "sk",
    ]
)  # fmt: skip
MARKUP = st.lists(st.one_of(PIECES, st.text(max_size=4)), max_size=12).map("".join)


def rich_printed(*objects: object, **options: object) -> str:
    """What rich's Console prints to a file that is not a terminal (t3rl's hook on, as in the CLI)."""
    scrub_rich(secrets.scrub_text)
    out = io.StringIO()
    Console(file=out, highlight=False, soft_wrap=True).print(*objects, **options)  # type: ignore[arg-type]
    return out.getvalue()


def plain_printed(*objects: object, **options: object) -> str:
    out = io.StringIO()
    PlainConsole(file=out, highlight=False, soft_wrap=True).print(*objects, **options)  # type: ignore[arg-type]
    return out.getvalue()


@settings(max_examples=400, deadline=None)
@given(MARKUP)
def test_escape_is_richs(text: str) -> None:
    assert escape(text) == rich_escape(text)


@settings(max_examples=400, deadline=None)
@given(MARKUP)
def test_the_plain_text_of_markup_is_richs_or_its_error(markup: str) -> None:
    try:
        expected = rich_render(markup, emoji=False).plain
    except MarkupError:
        with pytest.raises(MarkupError):
            plain(markup)
        return
    assert plain(markup) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(MARKUP, min_size=0, max_size=3),
    st.sampled_from([None, True, False]),
    st.sampled_from([" ", "", ", ", "\t"]),
    st.sampled_from(["\n", "", "\r\n"]),
)
def test_a_plain_console_prints_what_rich_prints(
    texts: list[str], markup: bool | None, sep: str, end: str
) -> None:
    options = {"sep": sep, "end": end} | ({} if markup is None else {"markup": markup})
    try:
        expected = rich_printed(*texts, **options)
    except MarkupError:
        with pytest.raises(MarkupError):
            plain_printed(*texts, **options)
        return
    assert plain_printed(*texts, **options) == expected


def test_what_a_plain_console_leaves_to_rich_is_printed_by_rich() -> None:
    """A renderable, a print that wraps, emoji asked for, a rule: rich's own output, unchanged."""
    from rich.panel import Panel

    for objects, options in (
        ((Panel("boxed"),), {}),
        (("a long line " * 12,), {"soft_wrap": False}),
        ((":fire:",), {"emoji": True}),
        ((42,), {}),
    ):
        assert plain_printed(*objects, **options) == rich_printed(*objects, **options)
    out = io.StringIO()
    PlainConsole(file=out).rule("stage")
    assert "stage" in out.getvalue() and "─" in out.getvalue()


def _secret_table(value: str) -> TextTable:
    table = TextTable(f"plan with {value}", ("#", "stage", "what"))
    table.add_row("0", "data", f"[dim]prepare {value}[/] into data/")
    table.add_row("1", f"x{value}", "short")
    return table


@pytest.mark.parametrize("width", [30, 200])
def test_a_secret_in_a_table_cell_is_masked_plain_and_by_rich(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A remembered value in a cell, the title and a print: masked by the console itself, before the
    layout (the stream under it here is a bare StringIO, no ScrubbingStream), by the plain console and
    by rich, which at width 30 folds the cell across lines."""
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    scrub_rich(secrets.scrub_text)  # as the CLI does for rich (the plain console needs nothing)
    value = "remembered-PlainTable-value-0123456789-abcdefghij"
    secrets.remember([value])
    outputs = []
    for make in (PlainConsole, Console):
        out = io.StringIO()
        printer = make(file=out, width=width, highlight=False, soft_wrap=True)
        printer.print(_secret_table(value))
        printer.print(f"run it: t3rl run key={value}")
        outputs.append(out.getvalue())
    plain_out, rich_out = outputs
    assert "0  data" in plain_out and "┃" in rich_out
    for out in outputs:
        joined = re.sub(r"[\s│┃|]", "", out)
        assert value[:12] not in joined and value[-12:] not in joined, out
        assert out.count("***") >= 4, out


def test_a_plain_table_aligns_its_columns_and_keeps_rows_whole() -> None:
    table = TextTable("t: 2 stages", ("#", "stage", "what", "GPUs"))
    table.add_row("0", "data", "[dim]a \\[b] very long summary that rich would fold[/]", "")
    table.add_row("1", "界面", "two\nlines", "8")
    assert table.lines(lambda texts: [plain(text) for text in texts]) == [
        "t: 2 stages",
        "#  stage  what                                          GPUs",
        "-  -----  --------------------------------------------  ----",
        "0  data   a [b] very long summary that rich would fold",
        "1  界面   two                                           8",
        "          lines",
    ]


def test_a_terminal_is_decided_as_rich_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stream(io.StringIO):
        def __init__(self, tty: bool | None) -> None:
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            if self.tty is None:
                raise ValueError("I/O operation on closed file")
            return self.tty

    for compatible in (None, "0", "1", "x"):
        for force in (None, "", "1"):
            for tty in (True, False, None):
                for name, value in (("TTY_COMPATIBLE", compatible), ("FORCE_COLOR", force)):
                    if value is None:
                        monkeypatch.delenv(name, raising=False)
                    else:
                        monkeypatch.setenv(name, value)
                stream = Stream(tty)
                assert styled(stream) == Console(file=stream).is_terminal, (compatible, force, tty)


def test_richs_console_is_hooked_when_it_is_imported_after_the_streams_are_scrubbed() -> None:
    """scrub_standard_streams no longer imports rich: a module that imports it later gets it scrubbed."""
    probe = (
        "import io, sys\n"
        "from launch.config import secrets\n"
        "secrets.scrub_standard_streams()\n"
        "assert 'rich' not in sys.modules\n"
        "secrets.remember(['hooked-late-value-0123456789'])\n"
        "from rich.console import Console\n"
        "out = io.StringIO()\n"
        "Console(file=out, width=12).print('x hooked-late-value-0123456789 :fire:')\n"
        "print(repr(out.getvalue()), file=sys.__stderr__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    shown = done.stderr.strip().splitlines()[-1]
    assert "***" in shown and "0123456789" not in shown and ":fire:" in shown, shown


PROBE = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps("rich.console" in sys.modules), file=sys.__stderr__))
sys.argv[0] = "t3rl"
from launch.cli import main
main()
"""


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_cold_command_piped_does_not_import_rich(command: str, tmp_path: Path) -> None:
    assert probed(PROBE, [command, "+experiment=stage2_bfcl"], tmp_path) is False


def test_a_plan_on_a_terminal_is_rendered_by_rich(tmp_path: Path) -> None:
    """Under a pseudo-terminal: rich's table (its box, its colours) and rich imported; the plain table's
    rule is not there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_") and k not in ("FORCE_COLOR",)}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0", "COLUMNS": "120"}
    env.pop("TTY_COMPATIBLE", None)
    command = [sys.executable, "-c", PROBE, "plan", "+experiment=stage2_bfcl"]
    shown, imported = _in_a_terminal(command, tmp_path, env)
    assert imported.strip().splitlines()[-1] == "true", imported
    assert "┏" in shown and "\x1b[" in shown and "stage2_bfcl: 5 stages" in shown, shown
    assert not re.search(r"^-  -+", shown, re.M), shown


def _in_a_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[str, str]:
    """(what `command` wrote to its terminal, its stderr); stdout is a pty."""
    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # a pty holds ~4 KiB: read while it runs
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, stdout=follower, stderr=subprocess.PIPE, text=True, timeout=300
        )
    finally:
        os.close(follower)
    reader.join(timeout=60)
    os.close(leader)
    assert done.returncode == 0, done.stderr
    return b"".join(chunks).decode(errors="replace"), done.stderr
