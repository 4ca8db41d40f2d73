"""Hunt wave 4 (secrets): a known value in the forms other programs write it.

A value a `Secret` revealed (or a secret-named variable holds) was masked as written and in the forms
Python's own encoders give it (`json.dumps`, `urllib.parse.quote`, `repr`, `shlex.quote`, base64). Three
ways it still reached a file or the terminal:

- cut short by a view (`rollouts show`, a table cell: its beginning and an ellipsis): `mask_revealed`
  handed `mask_values` a generator, which its first pass used up, so the cut-short pass saw no value;
- escaped by another program's encoder, as an HTTP error body or a gateway's log echoes it: JSON's
  `\\/` (PHP, some Java), `\\uXXXX` in either case (Go escapes `&<>`, .NET `+` and non-ASCII in
  capitals), a URL's `%xx` in lower case, a bytes repr's `\\xNN` (an engine quotes an HTTP error's
  body so), YAML's `\\xE4` and `\\U0001F600` (a child's log printing its config);
- in a server's log through its copier (`t3rl_core.redact`, in front of every server started with a
  key): it masked the bytes as typed only, so SGLang's `ServerArgs(api_key='…')`, a repr that doubles
  a backslash, a JSON line and a cut-short beginning kept the key in server.log.
"""

from __future__ import annotations

import json
import random
import string
import urllib.parse

import pytest
import yaml

from launch.config.secrets import scrub_text
from t3rl_core import redact, secret
from t3rl_core.secret import mask_revealed
from t3rl_core.secret_shapes import PemLines

PHRASE = "tulip garden is blooming 1987 again"  # no form of its own: only the Secret says what it is


def test_a_revealed_value_cut_short_by_a_view_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})
    for shown in (f"key: {PHRASE[:16]}… (more)", f"key: …{PHRASE[-16:]}"):
        masked = mask_revealed(shown)
        assert "tulip garden is" not in masked and "1987 again" not in masked, masked
    assert mask_revealed("a tulip gard… (more)") == "a tulip gard… (more)"  # under 12: too short to be it


KEY = "Ab3/Zq+ä&<9x>=="  # a generated password's signs, and a letter beyond ASCII


def _escaped(value: str, escape: dict[str, str]) -> str:
    return "".join(escape.get(c, c) for c in value)


ESCAPED = {
    "php": _escaped(KEY, {"/": "\\/", "ä": "\\u00e4"}),
    "go": _escaped(KEY, {"&": "\\u0026", "<": "\\u003c", ">": "\\u003e", "ä": "ä"}),
    "dotnet": _escaped(KEY, {"+": "\\u002B", "&": "\\u0026", "<": "\\u003C", ">": "\\u003E", "ä": "\\u00E4"}),
    "every_sign": "".join(c if c.isalnum() and c.isascii() else f"\\u{ord(c):04x}" for c in KEY),
    "url_lower": urllib.parse.quote(KEY, safe="").replace("%2F", "%2f").replace("%C3%A4", "%c3%a4"),
    # An engine's HTTP error quotes the body as bytes: f"HTTP {status}: {raw[:500]!r}"
    "bytes_repr": repr(KEY.encode())[2:-1],
    "yaml": _escaped(KEY, {"ä": "\\xE4"}),  # PyYAML's double-quoted style, without allow_unicode
}


@pytest.mark.parametrize("form", ESCAPED.values(), ids=list(ESCAPED))
def test_a_known_value_escaped_by_another_encoder_is_masked(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert form != KEY and form not in {json.dumps(KEY)[1:-1], urllib.parse.quote(KEY, safe="")}
    monkeypatch.setattr(secret, "_REVEALED", {KEY})
    body = f'401 {{"error": "refused {form}", "user": "alice"}}'  # no name before it: only its value says
    for masked in (mask_revealed(body), scrub_text(body, [KEY])):
        assert masked == '401 {"error": "refused ***", "user": "alice"}', masked


def _any_escape(c: str, draw: random.Random) -> str:
    """`c` as one of the ways an encoder may write it (JSON's \\u in either case, JSON's \\/, a URL's %XX
    in either case, or as it is)."""
    units = c.encode("utf-16-be")
    u = "".join(f"\\u{units[i] << 8 | units[i + 1]:04x}" for i in range(0, len(units), 2))
    forms = [
        c,
        u,
        u.upper().replace("\\U", "\\u"),
        urllib.parse.quote(c, safe=""),
        urllib.parse.quote(c, safe="").lower(),
    ]
    if c == "/":
        forms.append("\\/")
    if not c.isascii():
        forms.append(repr(c.encode())[2:-1])  # a bytes repr: \\xNN a UTF-8 byte
        forms.append(c.encode("unicode_escape").decode())  # the code point: \\xNN, \\uNNNN, \\UNNNNNNNN
    return draw.choice(forms)


def test_a_known_value_escaped_any_way_character_by_character_is_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """40 fixed draws: a value of letters, digits and signs with a letter beyond ASCII (one beyond the
    BMP among them), each sign written its own way; the text around it stays."""
    draw = random.Random(4)
    signs = "/+=&<>'\"!#$%^*()[]{}|;:,?@ äé😀"
    for _ in range(40):
        value = "".join(
            draw.choice(string.ascii_letters + string.digits + signs) for _ in range(draw.randint(8, 24))
        )
        value += draw.choice("äé😀")
        written = "".join(
            c if c.isascii() and (c.isalnum() or c in "-_.~") else _any_escape(c, draw) for c in value
        )
        monkeypatch.setattr(secret, "_REVEALED", {value})
        assert mask_revealed(f"refused ({written}) twice") == "refused (***) twice", (value, written)


def test_a_known_value_in_a_yaml_dump_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child's log printing its config as PyYAML dumps it: a letter beyond ASCII as its code point."""
    value = "pässwort-1987 😀"
    monkeypatch.setattr(secret, "_REVEALED", {value})
    dumped = yaml.safe_dump({"note": f"refused {value}", "user": "alice"})
    assert "\\xE4" in dumped and "\\U0001F600" in dumped, dumped
    assert mask_revealed(dumped) == 'note: "refused ***"\nuser: alice\n'


def test_another_value_escaped_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an escape of the value's own character is it: a `-` where it has `/` is another text."""
    monkeypatch.setattr(secret, "_REVEALED", {KEY})
    other = _escaped(KEY, {"/": "-", "ä": "\\u00e4"})
    assert mask_revealed(f"id {other}") == f"id {other}"


SERVER_KEY = 'k3y\\with/slash"and+Quote=='  # a generated key with a backslash


@pytest.mark.parametrize(
    "line",
    [
        f"server_args=ServerArgs(host='0.0.0.0', api_key={SERVER_KEY!r}, port=30000)",  # SGLang's
        json.dumps({"api_key": SERVER_KEY}),
        f"GET /v1/models?key={urllib.parse.quote(SERVER_KEY, safe='')}",
        f"key {SERVER_KEY[:14]}… rejected",  # a beginning cut short
    ],
)
def test_a_servers_copier_masks_its_key_as_the_server_writes_it(line: str) -> None:
    out = redact._masked(f"{line}\n".encode(), [SERVER_KEY.encode()], PemLines()).decode()
    assert "k3y" not in out and "slash" not in out and "Quote" not in out, out
    assert out.endswith("\n") and out.count("\n") == 1, out
