"""Credentials round seven left unmasked (docs/how-to/secrets.md, Limits), each kind generated in many
shapes and checked in every record kind (`scrub_text`: run dir files, logs; `scrub_obj`: config,
manifest, W&B; an eval record's line, its episode text too; a log's tee, line by line; pre-flight):

- an issuer's token of a prefix the list did not hold (Shopify `shpat_`, Twilio `SK` + 32 hex, Mailgun,
  Atlassian, Linear, Notion, Postman, Grafana, DigitalOcean's OAuth and refresh tokens): every row of
  `t3rl_core.secret_shapes.ISSUERS`, the one table the patterns are made from, is checked whole, quoted,
  JSON-escaped, URL-encoded, in a URL's path, cut short by a view and folded over two lines;
- an Azure connection string's key and an HTTP authorization header in an episode's own text;
- `user:password@host` without a scheme (`--db alice:V@db:5432/app`);
- a command folded over lines with a backslash (the credential on a continuation line), also as a
  log's tee sees it, one line at a time, and JSON-escaped;
- `.pgpass` lines (`host:port:db:user:V`);
- a random-looking key under any `…_KEY` name (`STRIPE_KEY=V`) and after a credential's word of a
  program no declaration names (`mytool login V`).

Ordinary text stays as it is: e-mail addresses, `mailto:`, docker digests, a cell's slices, times,
IPv6 addresses, hashes, UUIDs, model names, numbers, and the BFCL and tau2 data the official checkers
replay. Each masking test fails at the parent commit (these tests run against `git archive` of it).
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.parse
import uuid

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core.eval.jsonl import record_line
from t3rl_core.secret import mask_episode_text, mask_text, url_passwords
from t3rl_core.secret_names import looks_like_credential
from t3rl_core.secret_shapes import _TOKEN_STARTS, ISSUERS, PemLines, credentials_in, is_shaped_credential
from tests.launch.test_secret_kinds_seven import COMMANDS, VALUES, _shipped_texts

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tee(text: str) -> str:
    """`text` as a stage's tee writes it: each line scrubbed, then the lines' own state (PemLines)."""
    pem = PemLines()
    return "".join(pem(scrub_text(line)) for line in text.splitlines(keepends=True))


def records(text: str, episode: bool = True) -> dict[str, str]:
    """`text` as each kind of record writes it (`episode`: also as an episode's own text)."""
    written = {
        "scrub_text": scrub_text(text),
        "mask_text": mask_text(text),
        "scrub_obj": json.dumps(scrub_obj({"stage": {"note": text}})),
        "eval record": record_line({"task_id": "t", "error": text}),
        "tee": tee(text),
    }
    if episode:
        written["episode text"] = mask_episode_text(text)
        written["eval record episode"] = record_line({"task_id": "t", "messages": [{"content": text}]})
    return written


def assert_masked(value: str, text: str, episode: bool = True) -> None:
    for where, written in records(text, episode).items():
        assert value not in written, (where, text, written)


def assert_refused(value: str, text: str) -> None:
    """Pre-flight finds it (a config value holding it is refused)."""
    assert any(value in found for found in credentials_in(text) + url_passwords(text)), text


# ------------------------------------------------------------------ issuers' tokens


ROWS = [pytest.param(row, id=row[0]) for row in ISSUERS]


@pytest.mark.parametrize("row", ROWS)
@given(data=st.data())
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_issuers_token_is_masked_in_every_record_and_encoding(row: tuple, data: st.DataObject) -> None:
    """Whole, quoted, JSON-escaped, URL-encoded, in a URL's path and query, in a sentence, cut short by a
    view (where the row says its beginning is recognisable) and folded over two lines by a renderer."""
    _issuer, starts, pattern, cut = row
    # As issued: a body's base64 characters plain (a pattern also takes them percent-encoded).
    plain = re.sub(r"\|%2\[BbFf\]|\|%3\[Dd\]", "", pattern)
    token = data.draw(st.from_regex(re.compile(plain), fullmatch=True))
    assume(token.isascii() and token.isprintable())
    encoded = urllib.parse.quote(token, safe="")
    texts = [
        token,
        f"export OPTS={token}",
        f"the key '{token}' was rejected",
        json.dumps({"note": f'"{token}"'}),
        f"https://api.example.com/v1/{token}/items",
        f"https://api.example.com/v1/items?next={encoded}&page=2",
        f"curl -H 'X-Note: {encoded}' https://example.com",
    ]
    for text in texts:
        secret = encoded if encoded in text and token not in text else token
        assert_masked(secret, text)
        assert_refused(secret, text)
    assert is_shaped_credential(token), token  # a config value that is one is warned about
    start = next(s for s in starts if token.startswith(s))
    if cut is not None and re.match(cut, token):  # (Notion's `secret_…` cut short is a word)
        shown = token[: len(start) + 6] + "…"
        assert shown not in mask_text(f"key: {shown} (cut)"), shown
        assert shown not in mask_episode_text(f"key: {shown} (cut)"), shown
    fold = data.draw(st.integers(len(start) + 2, len(token) - 2))
    # A line beginning as a token does is read as a new one: a JWT folded just before its `eyJ…` claims
    # stays in two pieces (docs/how-to/secrets.md, Limits).
    assume(not token[fold:].startswith(_TOKEN_STARTS))
    folded = mask_text(f"log: {token[:fold]}\n{token[fold:]} end")
    for piece in (token[:fold], token[fold:]):
        assert len(piece) < 12 or piece not in folded, (token, fold, folded)


HEADERS = [
    ("Authorization: Basic {v}", "YWxpY2U6aHVudGVyMjAyNA=="),
    ("Authorization: Bearer {v}", "Zq8x7Kp2x7Kp2Wm9"),
    ('headers={{"Authorization": "Bearer {v}"}}', "Zq8x7Kp2x7Kp2Wm9"),
    ("curl -H 'X-Api-Key: {v}' https://api.example.com", "Zq8x7Kp2x7Kp2Wm9"),
    ("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=core.windows.net",
     "aB3+dE5/" * 11 + "=="),
    ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={v}",
     "aB3+dE5/" * 5 + "aB3="),
]  # fmt: skip


@pytest.mark.parametrize(("form", "value"), HEADERS)
def test_a_header_or_an_azure_key_is_masked_in_an_episodes_text_too(form: str, value: str) -> None:
    """Known by their form (no BFCL or tau2 task's data is written so): masked in an episode's own text
    as in every other record; before, only outside it."""
    assert_masked(value, form.format(v=value))


# ------------------------------------------------------------------ user:password@host


BARE_USERS = st.sampled_from(["alice", "postgres", "svc-deploy", "u_01", "admin.ro"])
BARE_PASSWORDS = VALUES.filter(lambda v: not set(v) & set("@/:'\"<>") and not v.startswith("***"))
BARE_HOSTS = st.sampled_from(
    ["db:5432", "db.example.com", "10.0.0.7:3306", "localhost", "localhost:6379", "pg-1.internal:5432"]
)


@given(BARE_USERS, BARE_PASSWORDS, BARE_HOSTS, st.integers(0, 5))
@SETTINGS
def test_a_password_before_a_host_without_a_scheme_is_masked(
    user: str, value: str, host: str, framing: int
) -> None:
    userinfo = f"{user}:{value}@{host}"
    text = [
        f"mytool --db {userinfo}/app",
        f"DATABASE={userinfo}",
        json.dumps({"dsn": userinfo}),
        f"connecting to '{userinfo}' failed: timeout",
        f"--db={userinfo} --pool 4",
        shlex.join(["psql", userinfo]),
    ][framing]
    assume(text.count(value) == 1 and value not in "".join(records("x").values()))
    assert_masked(value, text)
    assert_refused(value, text)


NOT_USERINFO = [
    "write to alice@example.com or mailto:bob@example.com",
    "image: nginx:1.25@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "python:3.11-slim@sha256:9f1e2d3c4b5a69788796a5b4c3d2e1f09f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "git clone git@github.com:org/repo.git",
    "y = x[i:n@W]",
    "z = a[1:k]@w.T",
    "contact: ops@example.com",
    "@decorator\ndef f(x: int) -> int: ...",
    "at 12:30@home",
    "sip:alice@example.com",
]


@pytest.mark.parametrize("text", NOT_USERINFO)
def test_addresses_digests_and_code_are_no_user_information(text: str) -> None:
    assert mask_text(text) == text and mask_episode_text(text) == text and url_passwords(text) == []


# ------------------------------------------------------------------ a command over lines


@st.composite
def continued(draw: st.DrawFn) -> tuple[str, str]:
    """A command of round seven's kinds, folded with ` \\` at line ends (one or two places), indented."""
    argv, value = draw(COMMANDS)
    words = [shlex.quote(word) for word in argv]
    breaks = draw(st.sets(st.integers(1, len(words) - 1), min_size=1, max_size=2))
    indent = draw(st.sampled_from(["  ", "    ", "\t"]))
    line = "".join(
        ("" if i == 0 else f" \\\n{indent}" if i in breaks else " ") + w for i, w in enumerate(words)
    )
    framing = draw(st.integers(0, 3))
    text = [line, f"$ {line}\nok\n", json.dumps({"cmd": line}), f"RUN {line}\n"][framing]
    assume(text.count(value) == 1 and value not in "".join(records("x").values()))
    return text, value


@given(continued())
@SETTINGS
def test_a_command_folded_over_lines_with_a_backslash_is_masked(case: tuple[str, str]) -> None:
    """Read as one line, as a shell reads it: in text, JSON-escaped, and by a tee line by line."""
    text, value = case
    assert_masked(value, text)
    assert_refused(value, text)


# ------------------------------------------------------------------ .pgpass


PG_FIELD = st.sampled_from(["db.example.com", "localhost", "10.0.0.7", "*", "pg-1"])
PG_NAMES = st.sampled_from(["app", "postgres", "*", "analytics_ro", "alice"])
PG_PASSWORDS = VALUES.filter(lambda v: ":" not in v and "\\" not in v and not v.startswith("***"))


@st.composite
def pgpass(draw: st.DrawFn) -> tuple[str, list[str]]:
    lines, values = [], []
    for _ in range(draw(st.integers(1, 3))):
        value = draw(PG_PASSWORDS)
        if draw(st.booleans()):
            value = value + "\\:" + draw(PG_PASSWORDS)  # an escaped colon belongs to the password
        port = draw(st.sampled_from(["5432", "*", "6432"]))
        lines.append(f"{draw(PG_FIELD)}:{port}:{draw(PG_NAMES)}:{draw(PG_NAMES)}:{value}")
        values.append(value)
    return "\n".join(lines) + "\n", values


@given(pgpass(), st.integers(0, 3))
@SETTINGS
def test_pgpass_lines_are_masked(case: tuple[str, list[str]], framing: int) -> None:
    content, values = case
    text = [content, f"$ cat ~/.pgpass\n{content}", json.dumps({"stdout": content}), f"{content}[exit 0]"][
        framing
    ]
    for value in values:
        assume(text.count(value) == 1 and not any(value in o for o in values if o != value))
        assume(value not in "".join(records("x").values()))
    for value in values:
        assert_masked(value.split("\\:")[0], text)


NOT_PGPASS = [
    "2026-01-01 12:00:00:123 INFO started",
    "2026-01-01:12:00:00:INFO",
    "fe80:0:0:0:1",
    "2001:db8:0:0:0:0:0:1",
    "ratio 1:2:3:4:5",
    "-p 0.0.0.0:8080:80",
    "elapsed 01:02:03:04",
]


@pytest.mark.parametrize("text", NOT_PGPASS)
def test_times_addresses_and_ratios_are_no_pgpass_line(text: str) -> None:
    assert mask_text(text) == text and mask_episode_text(text) == text


# ------------------------------------------------------------------ keys by their look, any program


RANDOM_KEYS = st.text(
    "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789", min_size=20, max_size=40
).filter(looks_like_credential)


@given(RANDOM_KEYS, st.integers(0, 6))
@SETTINGS
def test_a_random_key_under_any_key_name_or_after_a_login_word_is_masked(value: str, framing: int) -> None:
    """No declaration names these programs or variables: the name (`…_KEY`, `signingKey`) or the word
    (`login`, `auth`, `token`) and the value's random look say what it is. Not in an episode's text,
    where a name's value is the task's data (a BFCL task says `using access token 'V'`)."""
    text = [
        f"STRIPE_KEY={value}",
        f'{{"signingKey": "{value}"}}',
        f"mytool --license-key {value} run",
        f"mytool login {value}",
        f"acme-cli auth --relogin '{value}'",
        f"$ vendorctl token {value}\nok",
        f"LICENSE_KEY: {value}",
    ][framing]
    assert_masked(value, text, episode=False)
    assert_refused(value, text)


NOT_KEYS = [
    "sort_key=created_at2024",
    "primary_key: id",
    "git log --author token 3f9ac1d2b7e84a6c9d0e1f2a3b4c5d6e7f8091a2",
    "please login first, then run auth check",
    "login failed for user alice after 3 attempts",
    "the token budget is 4096 tokens",
    "token 151643 is <|im_end|>",
    f"login {uuid.UUID(int=0x1234)}",
]


@pytest.mark.parametrize("text", NOT_KEYS)
def test_words_numbers_and_hashes_after_those_names_stay(text: str) -> None:
    assert scrub_text(text) == text and mask_text(text) == text


# ------------------------------------------------------------------ ordinary text


ORDINARY = st.one_of(
    st.from_regex(r"/(?:[a-z0-9_.-]{1,12}/){0,4}[a-z0-9_.-]{1,12}", fullmatch=True),
    st.from_regex(r"[0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64}", fullmatch=True),
    st.uuids().map(str),
    st.sampled_from(
        ["Qwen/Qwen3-4B-Instruct-2507", "meta-llama/Llama-3.1-8B", "SKU-2291", "SKIP", "key-value"]
    ),
    st.integers(-(10**9), 10**9).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(
        ["12:00:00", "alice@example.com", "a:b", "x@y", "login", "token", "auth", "\\", ":5432:"]
    ),
)


@given(st.lists(ORDINARY, max_size=14), st.sampled_from([" ", "\n", ", ", ":", " \\\n  ", "@"]))
@settings(max_examples=300, deadline=None)
def test_ordinary_words_in_any_order_are_left_as_they_are(words: list[str], separator: str) -> None:
    # `token:V` and `auth:V` are a name's value, masked where V has 8+ characters with a letter and a
    # digit (`token:/a/00000`, a UUID): not ordinary words, drawn at random now and then.
    assume(separator != ":" or not {"token", "auth"} & set(words))
    text = separator.join(words)
    assert mask_text(text) == text and mask_episode_text(text) == text, text


def test_bfcl_and_tau2_data_is_unchanged_as_an_episodes_text() -> None:
    """Every shipped BFCL and tau2 file, as an episode's text and JSON-escaped as a record holds it:
    nothing of what its form gives away (tokens, headers, commands over lines, `.pgpass` lines) and no
    user information without a scheme, so what the official checkers replay is unchanged. (A tool's
    description in BFCL's live set says `'http://user:password@host:port'`: a URL's password, masked
    before this round as well.)"""
    from t3rl_core.secret import bare_userinfo_spans
    from t3rl_core.secret_shapes import mask_issued

    texts = _shipped_texts()
    if not texts:
        pytest.skip("neither bfcl_eval nor tau2 is installed: no shipped data to read")
    changed = [
        path
        for path, text in texts
        for piece in (text, json.dumps(text))
        if mask_issued(piece) != piece or bare_userinfo_spans(piece)
    ]
    assert changed == []
