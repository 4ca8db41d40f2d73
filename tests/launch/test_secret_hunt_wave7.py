"""Hunt wave 7 (secrets): kinds earlier waves left or no wave tried, each through `mask_text` (every
writer's text passes it) or `scrub_text` (the launcher's, with the values it knows), in-process.

- A hex key beside a credential's identifier with no sign (`GITHUB_TOKEN <40 hex>`): read as a hash
  (and as a version, beginning with a digit), where `GITHUB_TOKEN=<hex>` was masked.
- `DB_PASS V`, `GITHUB_PAT V`, `MYSQL_PWD V`, `X_AUTH V` (a table of variables, fish's `set`): only the
  words of prose (`password`, `token`, …) were read beside a value with no sign.
- A session cookie by its framework's name (`PHPSESSID=V`, `JSESSIONID=V`, `sessionid=V`), or a cookie
  where the text says it is one (`curl -b`, a cookie jar's repr, a `cookies={…}` mapping).
- A credential's entry whose value runs over the lines below (a YAML block scalar, a plain scalar
  continued): only its first line was masked.
- A credential's entry whose value holds a space (YAML's `password: it's 1234 go now`, an INI, a .env).
- A known value written in hexadecimal (`xxd -p`, `bytes.hex()`).
- A form-encoded value under a credential's name outside a URL's query (`password=tulip%20garden…`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest

from launch.config.secrets import scrub_obj, scrub_text, scrub_texts
from t3rl_core import redact
from t3rl_core.secret import mask_episode_text, mask_text
from t3rl_core.secret_shapes import PemLines, any_credentials_in

V = "Zq81Lm20Xc77Rt5mN8w3"
HEX = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"  # a 40-digit hex key (GitHub's classic tokens' look)
PASSWORD = "tulipgarden1987"


def _masked(text: str, *secrets: str) -> None:
    masked = mask_text(text)
    assert all(secret not in masked for secret in secrets), masked
    assert "***" in masked, masked


def _kept(text: str) -> None:
    assert mask_text(text) == text


# ------------------------------------------------------------------ a hex key beside its identifier


@pytest.mark.parametrize(
    "text", [f"GITHUB_TOKEN {HEX}", f"api_key {HEX}", f"github_token\t{HEX}", f"│ HF_TOKEN │ {HEX} │"]
)
def test_a_hex_key_beside_a_credentials_identifier_is_masked(text: str) -> None:
    _masked(text, HEX)


@pytest.mark.parametrize("text", [f"cache_key {HEX}", f"token {HEX}", f"commit {HEX}", "max_tokens 4096"])
def test_a_hash_beside_a_data_key_or_in_prose_stays(text: str) -> None:
    """`cache_key <sha>` is a hash, as after `=`; `token <sha>` in prose names no credential."""
    _kept(text)


# ------------------------------------------------------------------ PASS, PWD, PAT, AUTH beside a value


@pytest.mark.parametrize(
    "text",
    [
        f"DB_PASS  {PASSWORD}",
        f"1  DB_PASS  {PASSWORD}",  # pandas' print of a frame of variables
        f"set -x MYSQL_PWD {PASSWORD}",  # fish
        f"GITHUB_PAT {V}",
        f"X_AUTH {V}",
    ],
)
def test_a_credential_identifier_ending_pass_pwd_pat_or_auth_gives_its_value(text: str) -> None:
    _masked(text, PASSWORD, V)


@pytest.mark.parametrize(
    "text", ["the path /usr/x1234567", "MY_PATH abcdefgh123", "pass the test 12345678a", "auth enabled1234"]
)
def test_those_words_in_prose_or_other_names_stay(text: str) -> None:
    _kept(text)


# ------------------------------------------------------------------ session cookies


@pytest.mark.parametrize(
    "text",
    [
        f"PHPSESSID={V}",
        "JSESSIONID=8F2A9C1E4B7D3A6F5E0C2B1A9D8E7F6C",
        "https://shop.example.com/cart;jsessionid=8F2A9C1E4B7D3A6F5E0C2B1A9D8E7F6C?item=3",
        f"sessionid={V}",
        f"connect.sid=s%3A{V}.abcdef",
        f"laravel_session={V}",
        f"ASP.NET_SessionId={V}",
        f"{{'sessionid': '{V}'}}",
        f"<RequestsCookieJar[<Cookie session={V} for example.com/>]>",
        f"curl -b 'lang=en; session={V}' https://example.com",
        f"curl --cookie session={V} https://example.com",
        f"cookies={{'session': '{V}'}}",
        f"Cookies({{'session': '{V}'}})",
        f'{{"cookies": {{"session": "{V}"}}, "url": "https://example.com"}}',
    ],
)
def test_a_session_cookie_is_masked(text: str) -> None:
    _masked(text, V, "8F2A9C1E")


@pytest.mark.parametrize(
    "text",
    [
        "session_id=ep-0001-a3f9c2d4e5b6a7c8",  # a rollout's own session, one per episode
        "sessionid=short1",
        "curl -b cookies.txt https://example.com",  # a file of cookies, not one
        "curl -b 'lang=en' https://example.com",
        "x_sessionid_count=12345678901234567",
    ],
)
def test_a_rollouts_session_and_a_cookie_file_stay(text: str) -> None:
    _kept(text)


# ------------------------------------------------------------------ a value over the lines below


@pytest.mark.parametrize(
    "text",
    [
        "password: >-\n  Zq81Lm20\n  Xc77Rt5m\n  N8w3Kq9a\nhost: db",
        "api_key: |\n  Zq81Lm20\n  Xc77Rt5m\n  N8w3Kq9a\nnext: 1",
        "db:\n  password: Zq81Lm20\n    Xc77Rt5m\n    N8w3Kq9a\n  host: db",
    ],
)
def test_a_credentials_value_over_three_lines_is_masked_whole(text: str) -> None:
    masked = mask_text(text)
    assert not any(piece in masked for piece in ("Zq81Lm20", "Xc77Rt5m", "N8w3Kq9a")), masked
    assert masked.endswith(("host: db", "next: 1")), masked


@pytest.mark.parametrize(
    "text",
    [
        "password:\n  file: /run/secrets/db\n  mode: 0400",  # a mapping below the name, no value on its line
        "api_key: env:SGLANG_API_KEY\n  # rotated 2026",
        "- Token budget: the plain console scrubs every string\n  before it lays it out, 2 passes",
    ],
)
def test_a_mapping_a_reference_or_a_list_items_prose_below_a_name_stays(text: str) -> None:
    _kept(text)


# ------------------------------------------------------------------ a value with spaces


@pytest.mark.parametrize(
    "text",
    [
        "password: it's 1234 go now",
        "- password: it's 1234 go now",
        "db:\n  password: my dog 1234 rex\n  host: x",
        "[client]\npassword = my dog 1234 rex",
        "DB_PASSWORD=my dog 1234 rex",
        "export DB_PASSWORD=my dog 1234 rex",
        "eval.engine.api_key=my dog 1234 rex",
        "api_key: my dog 1234 rex  # the old one",
    ],
)
def test_a_credentials_value_with_spaces_is_masked_to_its_lines_end(text: str) -> None:
    masked = mask_text(text)
    assert "dog" not in masked and "1234" not in masked, masked


@pytest.mark.parametrize(
    "text",
    [
        "password: ${oc.env:DB_PASSWORD}",
        "Password: please enter it now",  # no digit: a prompt
        "api_key = load_key(3, cfg)",  # a traceback's line of code
        "last_token = ids[-1] if ids else None",
        'def f(\n    token: str = "0",\n    max_results: int = 10,\n)',
        "max_tokens: 4096 of 8192 used",
        "eos_token: <|im_end|> and 2 more",
    ],
)
def test_a_reference_a_prompt_or_code_after_a_name_stays(text: str) -> None:
    _kept(text)


def test_an_episodes_text_keeps_an_entrys_value() -> None:
    """In an episode's own text a name's value is the task's data (BFCL's made-up passwords)."""
    text = "password: my dog 1234 rex\nPHPSESSID=x"
    assert mask_episode_text(text) == text


# ------------------------------------------------------------------ a known value in hex


@pytest.mark.parametrize("encode", [str.lower, str.upper])
def test_a_known_value_in_hex_is_masked(encode: Callable[[str], str]) -> None:
    dump = "body: " + encode(PASSWORD.encode().hex()) + " end"
    assert scrub_text(dump, [PASSWORD]) == "body: *** end"


def test_a_hash_holding_no_known_value_stays() -> None:
    assert scrub_text(f"commit {HEX}", [PASSWORD]) == f"commit {HEX}"


# ------------------------------------------------------------------ a form's field, percent-encoded


@pytest.mark.parametrize(
    "text",
    [
        "password=tulip%20garden/1987%21",
        "curl -d 'password=tulip%20garden%21&user=alice' https://example.com/login",
        "data='api_key=ab%2Bcd12345'",
    ],
)
def test_a_forms_percent_encoded_value_is_masked_and_its_next_field_kept(text: str) -> None:
    masked = mask_text(text)
    assert "tulip" not in masked and "garden" not in masked and "ab%2Bcd" not in masked, masked
    assert "&user=alice" in masked or "&" not in text, masked


@pytest.mark.parametrize("text", ["path=%2Fusr%2Fbin", "next=%2Flogin", "q=max%20tokens%204096"])
def test_a_percent_encoded_field_of_another_name_stays(text: str) -> None:
    _kept(text)


# ------------------------------------------------------------------ base64 wrapped over lines

DOCUMENT = f"DB_HOST=db.internal\nDB_USER=alice\nDB_PASSWORD={PASSWORD}\nLOG_LEVEL=info\n"


@pytest.mark.parametrize("width", [76, 64, 60])
@pytest.mark.parametrize("indent", ["", "    "])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_wrapped_base64_of_a_document_is_masked_whole(width: int, indent: str, newline: str) -> None:
    """`base64 secrets.env` wraps at 76 columns: the first line alone decodes to `DB_PASSWORD=tulipgarden`
    (the value cut at its edge, no digit: not judged one), the second to the rest."""
    encoded = base64.b64encode(DOCUMENT.encode()).decode()
    lines = [indent + encoded[at : at + width] for at in range(0, len(encoded), width)]
    masked = mask_text("data: |" + newline + newline.join(lines))
    assert masked == "data: |" + newline + newline.join(indent + "***" for _ in lines), masked


@pytest.mark.parametrize("seed", [b"hello world, nothing secret here at all. " * 5, bytes(range(256)) * 2])
def test_base64_of_plain_text_or_binary_wrapped_over_lines_stays(seed: bytes) -> None:
    encoded = base64.b64encode(seed).decode()
    text = "\n".join(encoded[at : at + 76] for at in range(0, len(encoded), 76))
    _kept(text)


# ------------------------------------------------------------------ a change's new value


@pytest.mark.parametrize(
    "text",
    [
        f'  ~ secret = "{V}" -> "{V[::-1]}"',  # terraform's plan
        f"api_key=abc123def456 \u2192 {V[::-1]}",
        f"password: '{V}' => '{V[::-1]}'",
    ],
)
def test_the_new_value_of_a_change_under_a_credentials_name_is_masked(text: str) -> None:
    _masked(text, V, V[::-1])


def test_a_change_of_a_plain_setting_stays() -> None:
    _kept("max_tokens: 4096 -> 8192")


# ------------------------------------------------------------------ a table laid out by spaces


@pytest.mark.parametrize(
    "text",
    [
        f"    user         password\n0  alice  {PASSWORD}\n1    bob  {V}",  # pandas' print of a frame
        f"NAME       TOKEN\ndefault    {V}\nbuilder    {V[::-1]}",  # kubectl's custom columns
        f"User name  Password         Console login link\nalice      {PASSWORD}  https://x.example.com/console",
    ],
)
def test_a_value_under_a_credential_column_of_a_space_aligned_table_is_masked(text: str) -> None:
    _masked(text, PASSWORD, V, V[::-1])


@pytest.mark.parametrize(
    "text",
    [
        "step  max_tokens  reward\n1     4096        0.5\n2     8192abc1    0.7",
        "name   token_count\nfoo    12345678a",
        "Name        Token budget\nexample1    abc12345678",
        "    kind: TokenKind  # the kind of token\n    line: int  # the 1-indexed line number 2",
        "user   password\nalice  env:DB_PASS1",
    ],
)
def test_a_space_aligned_table_without_a_credential_column_or_code_stays(text: str) -> None:
    _kept(text)


# ------------------------------------------------------------------ texts scanned joined


def test_an_entry_that_begins_a_config_value_is_masked_where_texts_are_scanned_joined() -> None:
    """`++hardware.env_vars.NOTE='password: my dog 1234 rex'`: the value is its own text's first line,
    but config.yaml, manifest.json and the printed commands scrub a config's texts joined into one
    first (`scrub_texts`, `holds_secret`), and pre-flight scans them so (`any_credentials_in`)."""
    value = "password: my dog 1234 rex"
    assert scrub_obj({"hardware": {"env_vars": {"NOTE": value, "MODE": "fast"}}}) == {
        "hardware": {"env_vars": {"NOTE": "password: ***", "MODE": "fast"}}
    }
    texts = ["hardware.env_vars.NOTE", value, "x"]
    assert scrub_texts(texts, []) == ["hardware.env_vars.NOTE", "password: ***", "x"]
    assert any_credentials_in(["fast", value])
    assert not any_credentials_in(["fast", "password: ${oc.env:DB_PASSWORD}"])


# ------------------------------------------------------------------ a block read a line at a time

BLOCK = (
    "db:\n  password: >-\n    Zq81Lm20\n    Xc77Rt5m\n\n    N8w3Kq9a\n  host: db\n"
    "api_key: |\n  abc123def\nnext: 1\n"
)
BLOCK_MASKED = "db:\n  password: >-\n    ***\n    ***\n\n    ***\n  host: db\napi_key: |\n  ***\nnext: 1\n"


def test_a_block_under_a_credentials_entry_is_masked_by_a_line_at_a_time_copier() -> None:
    """A stage's log tee and a Ray job's log copy (`scrub_text` then `PemLines`, a line at a time), and a
    server's copier (`redact._masked`, a chunk at a time): each line of the block alone is a piece."""
    lines = BLOCK.splitlines(keepends=True)
    pem = PemLines()
    assert "".join(pem(scrub_text(line)) for line in lines) == BLOCK_MASKED
    pem = PemLines()
    assert b"".join(redact._masked(line.encode(), [], pem) for line in lines).decode() == BLOCK_MASKED


def test_lines_below_a_plain_entry_or_a_block_of_another_name_stay() -> None:
    text = "description: |\n  Zq81Lm20 rotated weekly\nquery: a | b\n  Xc77Rt5m\n"
    pem = PemLines()
    assert "".join(pem(line) for line in text.splitlines(keepends=True)) == text
    assert not pem.needed("query: a | b\n")
