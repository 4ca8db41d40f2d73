"""Hunt wave 5 (secrets): what wave four left masked too much, and forms not looked for before.

- `password=V` above a line beginning with a word of prose (`started server`) lost that word: the
  fold rule (a value folded over lines by a renderer is read joined, `test_secret_redteam.py`'s
  `test_a_value_folded_inside_a_panel_is_masked`) read the word as the value's end. A value that is
  whole without that line now ends at the line break; a value whose rest is not a word of prose, or is
  a piece of 12+ characters, is still read joined.
- A value a `Secret` revealed, written by a writer that quotes a quote or a markup sign otherwise than
  Python's encoders: doubled (PyYAML's single-quoted style, SQL, CSV), closed and opened again (`'\\''`,
  shlex's `'"'"'`), as an HTML or XML entity, or percent-encoded twice. Pieces on each side of the sign
  shorter than 12 characters stayed (the whole value, when it is short).
- A credential's name and its value printed in two writes (`print("password:", V)`: print writes each
  argument and the separator apart) reached the terminal: the stream under every CLI output scrubbed
  each write alone.
"""

from __future__ import annotations

import html
import io
import random
import shlex
import string
import textwrap
import urllib.parse
import xml.sax.saxutils
from collections.abc import Callable

import pytest
import yaml

from launch.config.secrets import ScrubbingStream, scrub_text
from t3rl_core import secret
from t3rl_core.secret import MASK, mask_revealed, mask_text

# ------------------------------------------------------------------ a value above a line of prose

PROSE = ["started server on port 30000", "Ready.", "done", "loading weights", "ok"]


@pytest.mark.parametrize("after", PROSE)
@pytest.mark.parametrize(
    "line",
    ["password=tulipgarden1987", "DB_PASSWORD=hunter2xyz9", "api_key: Zq81Lm20Xc77", "token=abc123def456"],
)
def test_a_line_of_prose_below_a_named_value_keeps_its_words(line: str, after: str) -> None:
    name, sign, _ = line.partition("=") if "=" in line else line.partition(": ")
    for text in (f"{line}\n{after}", f"log start\n{line}\n{after}\nlog end"):
        masked = mask_text(text)
        assert masked == text.replace(line, f"{name}{sign}***"), masked
        assert scrub_text(text, []) == masked


def test_a_named_value_a_renderer_folded_is_still_masked_whole() -> None:
    """Every fold of a value under a credential's name (textwrap's, at every width that splits it), the
    text after it on the same logical line: no piece of 12+ characters stays, and the text around does."""
    draw = random.Random(5)
    for _ in range(10):
        value = "".join(
            draw.choice(string.ascii_letters + string.digits) for _ in range(draw.randint(20, 40))
        )
        value = value[:-1] + "7"  # a digit: the value's end is never a word of prose
        logical = f"password={value} then more"
        for width in range(12, len(logical)):
            folded = "\n".join(textwrap.wrap(logical, width, break_on_hyphens=False))
            masked = mask_text(folded)
            for start in range(len(value) - 11):
                assert value[start : start + 12] not in masked, (value, width, folded, masked)
            assert masked.replace("\n", " ").split()[-2:] == ["then", "more"], masked


def test_a_fold_whose_rest_is_a_word_of_prose_leaves_at_most_a_short_piece() -> None:
    """The rest of a value that reads as a word of prose is left (the line is taken for the next), at most
    11 characters: a piece too short to be it (docs/how-to/secrets.md, Hunt wave five)."""
    masked = mask_text("password=abc123def456\nxyz then")
    assert masked == "password=***\nxyz then", masked
    long_rest = "password=abc123def456\nabcdefghijkl then"  # 12 letters: not a word of prose here
    assert "abcdefghijkl" not in mask_text(long_rest)


# ------------------------------------------------------------------ a known value quoted by another writer

QUOTE_WRITERS = {
    # PyYAML's single-quoted style: its choice for a string that needs quotes (`x: …` reads as a mapping)
    "yaml": lambda v: yaml.safe_dump({"note": f"x: {v}"}),
    "sql": lambda v: "ALTER USER bob PASSWORD '" + v.replace("'", "''") + "'",
    "csv": lambda v: 'bob,"' + v.replace('"', '""') + '",db',
    "git_shell": lambda v: "ssh h 'login " + v.replace("'", "'\\''") + "'",
    "shlex": lambda v: shlex.quote(f"login {v}"),
    "html": lambda v: f"<td>{html.escape(v)}</td>",
    "xml_attr": lambda v: f"<cred value={xml.sax.saxutils.quoteattr(v + chr(39))} />",
    "entities": lambda v: (
        v.replace("&", "&#38;").replace("'", "&#x27;").replace('"', "&#34;").replace("<", "&#x3C;")
    ),
    "url_twice": lambda v: "next=" + urllib.parse.quote(urllib.parse.quote(v, safe=""), safe=""),
}


@pytest.mark.parametrize("writer", QUOTE_WRITERS.values(), ids=list(QUOTE_WRITERS))
def test_a_known_value_quoted_by_another_writer_is_masked(
    writer: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value with a quote or a markup sign between two pieces shorter than 12 characters (so neither
    is masked as a beginning or an end), each such sign in turn; the text around it stays."""
    for sign in "'\"&<>":
        value = f"Xy7kq{sign}pQ2z9W"
        monkeypatch.setattr(secret, "_REVEALED", {value})
        written = writer(value)
        for masked in (mask_revealed(written), scrub_text(written, [value])):
            assert "Xy7kq" not in masked and "pQ2z9W" not in masked, (sign, written, masked)
            assert MASK in masked, masked


def test_a_quote_of_another_value_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {"Xy7kq'pQ2z9W"})
    other = "it''s Xy7kq pQ2z9W &amp; more"
    assert mask_revealed(other) == other


# ------------------------------------------------------------------ a line written in pieces


@pytest.mark.parametrize(
    "pieces",
    [
        ("password:", "hunter2xyz9"),  # print's separator and each argument are three writes
        ("Authorization: Bearer", "abcdefgh12345678"),
        ("https://alice:", "hunter2xyz9@db/app"),
        ("DB_PASSWORD=", "hunter2xyz9"),
    ],
)
def test_a_credential_printed_in_pieces_is_masked(pieces: tuple[str, str]) -> None:
    """The stream under every CLI output saw each write alone: a name and its value in two writes
    (`print("password:", V)`) read as neither."""
    inner = io.StringIO()
    stream = ScrubbingStream(inner)
    print(*pieces, file=stream, sep="" if pieces[0].endswith((":", "=")) and "//" in pieces[0] else " ")
    stream.write("a prompt> ")
    assert inner.getvalue().count("\n") == 1 and "hunter2xyz9" not in inner.getvalue(), inner.getvalue()
    assert "12345678" not in inner.getvalue() and "prompt" not in inner.getvalue()  # kept until a flush
    stream.flush()
    assert inner.getvalue().endswith("\na prompt> "), inner.getvalue()
