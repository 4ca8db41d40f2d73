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
- A value 8+ characters long with a letter and a digit was masked after a credential's name followed by
  `=` or `:`, or in prose (`the api key is V`), not after the name spelt as an identifier and a space
  (`HF_TOKEN V`, `api_key V`: a table's columns, a Dockerfile's `ENV NAME V`), inside a markup element
  of that name (`<password>V</password>`), nor as pydantic's `input_value='V'`, whose location
  (`db.password`) stands on the line above.
- A known value a child folded over two lines, read by a line-by-line copier (a stage's log tee, a
  server's copier) as two texts: a value under 24 characters could fold into two pieces under 12,
  neither masked as a beginning or an end.
- A quoted value under a credential's name holding a character outside a plain value's set (JSON's
  `\u00e4` or `\"`, a space, `&`, YAML's doubled `'`) was masked up to that character only, or not at
  all: `{"password": "p\u00e4ss1234wordXY"}` stayed whole, `"Tr0ub4dor&3"` became `***&3`.
"""

from __future__ import annotations

import html
import io
import json
import os
import random
import re
import shlex
import string
import textwrap
import urllib.parse
import xml.sax.saxutils
from collections.abc import Callable

import pytest
import yaml
from pydantic import BaseModel, Field, ValidationError

from launch.config.secrets import ScrubbingStream, scrub_text
from t3rl_core import redact, secret
from t3rl_core.secret import MASK, mask_revealed, mask_text
from t3rl_core.secret_pieces import EDGE
from t3rl_core.secret_shapes import PemLines

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


# ------------------------------------------------------------------ a name and its value apart

VALUE = "hunter2xyz9Q"  # no form of its own: only a name beside it says what it is


@pytest.mark.parametrize(
    "text",
    [
        f"HF_TOKEN {VALUE}",  # a table of variables: name and value in columns
        f"DB_PASSWORD\t{VALUE}",
        f"| api_key     | {VALUE} |",
        f"│ DB_PASSWORD │ {VALUE} │",  # rich's table
        f"ENV API_TOKEN {VALUE}",  # a Dockerfile's ENV without `=`
        f"wandb: api_key {VALUE} (from the environment)",
        f"accessToken {VALUE}",
        f"the client-secret is {VALUE}.",
        f"<password>{VALUE}</password>",  # Maven's settings.xml, a SOAP body
        f'<ns:apiKey type="x">{VALUE}</ns:apiKey>',
        f"<HF_TOKEN>\n  {VALUE}\n</HF_TOKEN>",
    ],
)
def test_a_value_beside_a_credentials_name_spelt_as_an_identifier_is_masked(text: str) -> None:
    assert VALUE not in scrub_text(text, []) and MASK in scrub_text(text, []), scrub_text(text, [])


def test_pydantics_refusal_of_a_credential_field_masks_the_value_it_quotes() -> None:
    """The location (`db.password`) and the value (`input_value='V'`) are on two lines of the error."""

    class Db(BaseModel):
        password: str = Field(max_length=8)
        port: int = 5432

    class Config(BaseModel):
        db: Db
        api_key: list[int] = []

    with pytest.raises(ValidationError) as refused:
        Config(db={"password": VALUE, "port": "abc123def456"}, api_key=[VALUE])  # type: ignore[arg-type,list-item]
    message = str(refused.value)
    assert message.count(VALUE) == 2, message
    masked = scrub_text(message, [])
    assert VALUE not in masked and masked.count(MASK) == 2, masked
    assert "input_value='abc123def456'" in masked  # the port's location names no credential


@pytest.mark.parametrize(
    "text",
    [
        "pad_token <|im_end|>",
        "max_tokens 4096",
        "eos_token_id 151643",
        "max_new_tokens 32768",
        "HF_TOKEN env:HF_TOKEN",
        "hf_token_file /run/secrets/hf1",
        "sort_key created_at2024",
        "<password>${DB_PASSWORD}</password>",
        "<name>abc123def456</name>",
        "db.port\n  Input should be a valid integer"
        " [type=int_parsing, input_value='abc123def456', input_type=str]",
    ],
)
def test_what_names_no_credential_or_gives_no_value_stays(text: str) -> None:
    assert scrub_text(text, []) == text


# ------------------------------------------------------------------ a URL without its scheme


@pytest.mark.parametrize(
    "text",
    [
        f"//alice:{VALUE}@db.example.com/app",  # a network-path reference
        f'<script src="//bob:{VALUE}@cdn.example.com/a.js">',
        f"DATABASE=//alice:{VALUE}@db:5432/app",
    ],
)
def test_user_information_of_a_url_without_its_scheme_is_masked(text: str) -> None:
    masked = scrub_text(text, [])
    assert VALUE not in masked and f":{MASK}@" in masked, masked


# ------------------------------------------------------------------ a known value over two lines, read apart


def test_a_known_value_folded_over_two_lines_read_one_at_a_time_is_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line-by-line copier (a stage's log tee: `scrub_text`; a server's: `redact._masked`; a stage's own
    records: `mask_revealed`) gets a value a child folded as two texts: each piece of a value shorter
    than 24 characters may be under 12, which `_mask_ends` left. A piece of 6+ characters at the break
    (the line's end, the next line's start) is masked unless it reads as a word."""
    draw = random.Random(6)
    for _ in range(12):
        value = "".join(
            draw.choice(string.ascii_letters + string.digits) for _ in range(draw.randint(13, 23))
        )
        monkeypatch.setattr(secret, "_REVEALED", {value})
        for fold in range(EDGE, len(value) - EDGE + 1):
            head, rest = value[:fold], value[fold:]
            first, second = f"token {head}\n", f"  {rest} (expires)\n"
            outs = [
                (scrub_text(first, [value]), scrub_text(second, [value])),
                (mask_revealed(first), mask_revealed(second)),
                tuple(
                    redact._masked(t.encode(), [value.encode()], PemLines()).decode() for t in (first, second)
                ),
            ]
            for one, two in outs:
                assert head not in one or re.fullmatch(r"[A-Z]?[a-z]+", head), (value, fold, one)
                assert rest not in two or re.fullmatch(r"[A-Z]?[a-z]+", rest), (value, fold, two)
                assert one.startswith("token ") and two.endswith(" (expires)\n"), (one, two)


def test_a_passphrases_word_at_a_lines_end_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {"correct horse battery staple"})
    assert mask_revealed("the answer is correct\n") == "the answer is correct\n"
    monkeypatch.setattr(secret, "_REVEALED", {"Zq81Lm20Xc77Rt5mN8w3"})
    assert mask_revealed("Zq81Lm20 is not at an edge\n") == "Zq81Lm20 is not at an edge\n"


# ------------------------------------------------------------------ a quoted value with any character


@pytest.mark.parametrize(
    "value",
    ["päss1234qzXY", 'ab"cd1234qz', "ab'cd1234qz", "ab cd 1234 qz", "Tr0ub4dor&3", "abc😀def1234XY"],
)
def test_a_quoted_value_under_a_credentials_name_is_masked_to_its_closing_quote(value: str) -> None:
    """JSON's escapes (`ensure_ascii`: `\\u00e4`, a surrogate pair; `\\"`), a repr's other quote, YAML's
    doubled `'`, a space or `&` stopped the value at its first such character: the rest, or all of it
    (nothing before the escape was 8 long), stayed."""
    forms = [
        json.dumps({"password": value, "user": "alice"}),
        json.dumps({"api_key": value}, ensure_ascii=False),
        repr({"token": value, "user": "alice"}),
        yaml.safe_dump({"password": value}, default_style="'"),
        f'DB_PASSWORD="{value.replace(chr(34), chr(92) + chr(34))}" ./start',
    ]
    pieces = [p for p in re.split(r"[^A-Za-z0-9]+", value) if len(p) >= 3]
    for text in forms:
        masked = scrub_text(text, [])
        assert not any(piece in masked for piece in pieces), (text, masked)
        assert "alice" in masked or "alice" not in text, masked


def test_a_quoted_reference_or_special_token_stays() -> None:
    for text in [
        json.dumps({"eos_token": "<|reserved_special_token_0|>"}),
        json.dumps({"api_key": "env:MY KEY2"}),
        'password="$(cat /run/secrets/db1)"',
        json.dumps({"pad_token": "[PAD 12]"}),
    ]:
        assert scrub_text(text, []) == text


# ------------------------------------------------------------------ headers, subscripts, HTTPie


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Negotiate {VALUE}abcd",  # Kerberos
        f"Authorization: SSWS {VALUE}abcd",  # Okta
        f"authorization=Bearer%20{VALUE}abcd",  # a header URL-encoded into a query
        f"'Authorization': 'Bearer%20{VALUE}abcd'",
        f"os.environ['HF_TOKEN'] = '{VALUE}'",  # a subscript's bracket before the sign
        f'env["DB_PASSWORD"]="{VALUE}"',
        'os.environ["API_KEY"] = "Tr0ub4dor&3x"',
        f"http --auth alice:{VALUE} example.com",  # HTTPie
        f"xh -a alice:{VALUE} example.com",
        f"svn checkout --password {VALUE} https://svn.example.com/r",
    ],
)
def test_an_authorization_of_any_scheme_a_subscript_and_httpie_are_masked(text: str) -> None:
    masked = scrub_text(text, [])
    assert VALUE not in masked and "Tr0ub4dor" not in masked and MASK in masked, masked


@pytest.mark.parametrize(
    "text",
    [
        "Authorization: required for value 1234abcd",
        "the Authorization header is missing",
        'x["max_tokens"] = 4096',
        'cfg["eos_token"] = "<|im_end|>"',
        "an http -a flag",
    ],
)
def test_a_header_word_or_a_subscript_without_a_credential_stays(text: str) -> None:
    assert scrub_text(text, []) == text


def test_a_forked_child_does_not_write_its_parents_unfinished_line() -> None:
    """compose_ahead forks a child that flushes stderr: the line its parent had not finished is the
    parent's to write (else it is written twice)."""
    inner = io.StringIO()
    stream = ScrubbingStream(inner)
    stream.write("composing ")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        stream.flush()
        os.write(write, inner.getvalue().encode() or b"-")
        os._exit(0)
    os.waitpid(child, 0)
    os.close(write)
    assert os.read(read, 100) == b"-"
    os.close(read)
    stream.flush()
    assert inner.getvalue() == "composing "


def test_a_known_value_with_its_signs_escaped_by_a_backslash_is_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """bash's `printf %q` (and `${x@Q}`'s unquoted words) writes each sign with a backslash before it, a
    double-quoted word `\\!`, `\\$` and `` \\` ``, Markdown `\\#`: only `\\"`, `\\\\`, `\\/` and `\\'` were
    read as a sign's escape."""
    value = "Rv9#kLm2!qZx7 W$t`"
    monkeypatch.setattr(secret, "_REVEALED", {value})
    for written in (
        re.sub(r"([^A-Za-z0-9_./-])", r"\\\1", value),  # printf %q
        '"' + value.replace("!", "\\!").replace("$", "\\$").replace("`", "\\`") + '"',
        value.replace("#", "\\#").replace("!", "\\!"),  # Markdown
    ):
        assert mask_revealed(f"arg {written} end") in ("arg *** end", 'arg "***" end'), written


@pytest.mark.parametrize(
    "text",
    [
        f"'password' => '{VALUE}'",  # Ruby's and PHP's hashes
        f'"api_key" => "{VALUE}",',
        f"https://sso.example.com/?next=%2Flogin%3Fpassword%3D{VALUE}",  # a query inside another's value
        f"body: password%3A%20{VALUE}",
        f'<add key="Password" value="{VALUE}" />',  # .NET's app.config, NuGet.config
        f'<entry key="api.key">{VALUE}</entry>',  # Java's properties in XML
    ],
)
def test_a_value_after_an_arrow_an_encoded_sign_or_a_keyed_element_is_masked(text: str) -> None:
    masked = scrub_text(text, [])
    assert VALUE not in masked and MASK in masked, masked


@pytest.mark.parametrize(
    "text",
    [
        '<add key="Timeout" value="abc12345def" />',
        '<entry key="user.name">alice12345</entry>',
        "max_tokens%3D4096",
        "password => env:PW1",
    ],
)
def test_a_keyed_element_or_an_encoded_sign_without_a_credential_stays(text: str) -> None:
    assert scrub_text(text, []) == text
