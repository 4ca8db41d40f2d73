"""Credentials round nine left unmasked (docs/how-to/secrets.md, Limits), each kind generated in many
shapes and checked in every record kind (as rounds eight and nine check theirs):

- a key no issuer marks and no name announces (an AWS secret access key in a note, a vendor's key as
  a bare argument or as the value of a variable whose name says nothing, `MODEL_OPTS`): known by its
  look alone, 32+ base62/base64 characters drawn at random (t3rl_core.secret_name_words.is_bare_key); hashes,
  UUIDs, digests, ids, identifiers in camelCase and paths stay;
- `user:password@host` with a bare host as a whole quoted or bracketed item or a call's argument
  (`connect(alice:pw@db)`, `'alice:pw@db'`, `[alice:pw@db]`), or in a URL's shape (`alice:hunter@db/app`),
  whatever the password looks like (letters only, two characters);
- a URL's password written with its slashes escaped (`postgres:\\/\\/bob:hunter@db`, as JSON encoders
  may) or percent-encoded as a query's value (`?dsn=postgres%3A%2F%2Fbob%3Ahunter%40db`).

Each masking test fails at the parent commit (run against `git archive` of it).
"""

from __future__ import annotations

import json
import random
import string
import urllib.parse
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_text, secret_values
from t3rl_core.secret import mask_episode_text, mask_text, url_passwords
from t3rl_core.secret_env import without_credentials
from t3rl_core.secret_shapes import credentials_in
from tests.launch.test_secret_kinds_eight import assert_masked, assert_refused, records
from tests.launch.test_secret_kinds_nine import NAMES
from tests.support.source_identifiers import source_identifiers

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------ a key known by its look alone

BASE62 = string.ascii_letters + string.digits
BASE64 = BASE62 + "+/"
FRAMINGS = [
    "{k}",
    "note: the key we were sent is {k} (rotate it)",
    "MODEL_OPTS={k}",
    "mytool --opts {k} run",
    '{{"value": "{k}"}}',
    "  File x.py, line 3, in f\n    connect('{k}')\nValueError: refused {k}",
    "export SOMETHING='{k}'",
]


def _drawn(seed: int, alphabet: str) -> str:
    """A key as a vendor issues one: 32 to 88 characters drawn uniformly (with `=` padding for base64)."""
    rng = random.Random(seed)
    key = "".join(rng.choice(alphabet) for _ in range(rng.randint(32, 88)))
    return key + "=" * rng.randint(0, 2) if alphabet == BASE64 else key


@pytest.mark.parametrize("alphabet", [BASE62, BASE64], ids=["base62", "base64"])
def test_keys_drawn_at_random_are_masked_in_every_record_without_a_name(alphabet: str) -> None:
    """300 fixed draws, each in one framing: at least 97 % are masked in every record and refused at
    pre-flight (a draw may read as words or lack a digit: about 1 in 100 at 32 characters)."""
    masked = 0
    for seed in range(300):
        key = _drawn(seed, alphabet)
        text = FRAMINGS[seed % len(FRAMINGS)].format(k=key)
        written = records(text, episode=False)
        if all(key.rstrip("=") not in out for out in written.values()) and any(
            key.rstrip("=") in found for found in credentials_in(text)
        ):
            masked += 1
    assert masked >= 291, masked


def test_the_aws_example_secret_key_in_a_note_is_masked() -> None:
    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    for text in (f"aws secret {key}", f"creds: {key}", json.dumps({"k": key})):
        assert_masked(key, text, episode=False)
        assert_refused(key, text)


def test_a_variable_whose_name_says_nothing_is_a_credential_by_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its value is masked cut short (a view's first characters) and folded, and it is kept from the
    environment of code t3rl does not vouch for (cells, command services)."""
    key = _drawn(7, BASE62)
    monkeypatch.setenv("MODEL_OPTS", key)
    assert key in secret_values()
    assert key[:20] not in scrub_text(f"opts: {key[:20]}…")
    assert key not in scrub_text(f"opts:\n{key[:30]}\n{key[30:]}")
    assert "MODEL_OPTS" not in without_credentials({"MODEL_OPTS": key, "PATH": "/usr/bin"})


NOT_KEYS = st.one_of(
    st.from_regex(r"[0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64}|[0-9A-F]{32}", fullmatch=True),
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
    # An integrity hash (npm, pip's --hash in base64), after its algorithm's name.
    st.binary(min_size=32, max_size=64).map(lambda b: "sha512-" + __import__("base64").b64encode(b).decode()),
    # Ray's submission ids, KSUID-long and nanoid-long ids: too short to tell from words.
    st.text(BASE62, min_size=16, max_size=27).map(lambda s: "raysubmit_" + s),
    st.text(BASE62, min_size=16, max_size=27),
    # A random piece of a name, a path or a URL's path.
    st.text(BASE62, min_size=32, max_size=48).map(lambda s: f"/data/{s}/model"),
    st.text(BASE62, min_size=32, max_size=48).map(lambda s: f"run_{s}"),
    st.text(BASE62, min_size=32, max_size=48).map(lambda s: f"https://example.com/v1/{s}"),
    st.sampled_from(
        [
            "NPUCompressedTensorsW4A8Int8DynamicMoE",
            "FlashInferTrtllmGenMxfp4MoeQuantInfo",
            "FP8WoAGroupMajorQuantUE8M0Kernel",
            "fontInfoOpenTypeOS2CodePageRangesOptions",
            "AWSIoT1ClickReadOnlyAccess",
            "Qwen/Qwen3-4B-Instruct-2507",
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx1c2VyQGV4YW1wbGUuY29tIHNzaC1lZDI1NTE5 a@b",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            "checkpoints/Qwen3Base/iter0001000/HFModel",
            "SphericalHarmonicY/26/01/02/0004/",
        ]
    ),
)


@given(st.lists(NOT_KEYS, min_size=1, max_size=6), st.sampled_from([" ", "\n", ", ", "="]))
@SETTINGS
def test_hashes_ids_identifiers_and_paths_are_left_as_they_are(words: list[str], separator: str) -> None:
    text = separator.join(words)
    assert mask_text(text) == text and mask_episode_text(text) == text and scrub_text(text) == text, text


def test_no_identifier_of_the_standard_library_or_t3rl_reads_as_a_key() -> None:
    """Every name written in the standard library's modules and in t3rl's own (class names, constants):
    what a traceback or a log line prints."""
    from t3rl_core.secret_name_words import is_bare_key

    names = source_identifiers(r"\b[A-Za-z][A-Za-z0-9]{31,}\b")
    assert sorted(name for name in names if is_bare_key(name)) == []


# ------------------------------------------------------------------ user:password@<bare host>, any password


USERS = st.sampled_from(["alice", "postgres", "svc-deploy", "u_01", "admin.ro"])
ANY_PASSWORDS = st.text(string.ascii_letters + string.digits + "!#%^*_+-.~", min_size=2, max_size=20).filter(
    lambda v: v[0] not in "-*=" and v.lower() not in {"pw", "pwd", "pass", "passwd", "password", "secret"}
)
HOSTS = st.sampled_from(["db", "postgres", "redis", "mongo-1", "cache"])


@given(USERS, ANY_PASSWORDS, HOSTS, st.integers(0, 7))
@SETTINGS
def test_user_information_as_a_whole_item_or_in_a_urls_shape_is_masked_whatever_the_password(
    user: str, value: str, host: str, framing: int
) -> None:
    userinfo = f"{user}:{value}@{host}"
    text = [
        f"connect({userinfo})",
        f"DSN('{userinfo}')",
        f'engine = create("{userinfo}")',
        f"hosts: [{userinfo}]",
        f"psql {userinfo}/app",
        f"DATABASE={userinfo}?sslmode=require",
        f"failed: ({userinfo}) refused",
        json.dumps({"dsn": userinfo}),
    ][framing]
    assume(text.count(value) == 1 and value not in "".join(records("x").values()))
    assume(value not in text.replace(userinfo, ""))
    assert_masked(value, text)
    assert_refused(value, text)


def test_the_brief_s_example_is_masked() -> None:
    for text in ("connect(alice:pw@db)", "'alice:pw@db'", "[alice:pw@db]", "postgres://bob:hunter@db"):
        written = mask_text(text)
        assert ":***@" in written and ":***@" in mask_episode_text(text), (text, written)


@given(NAMES, NAMES, NAMES, NAMES, st.integers(0, 5))
@SETTINGS
def test_code_and_placeholders_are_still_no_user_information(
    a: str, b: str, c: str, d: str, framing: int
) -> None:
    """A call's argument is no slice, but a subscript, a lambda's parameters, a walrus and a mapping
    inside a call still are code; a documentation placeholder gives nothing away."""
    text = [
        f"y = f(x[{a}:{b}@{c}])",
        f"g = f(lambda {a}, {b}:{c}@{d}.w)",
        f"f({a}:={b}@{c})",
        f"f({{{a}:{b}@{c} for {a} in {d}}})",
        f"y = f(x[{a}:{b}@{c}.{d}], 2)",
        '# checked for a "user:pw@host" format',
    ][framing]
    assert mask_text(text) == text and mask_episode_text(text) == text and scrub_text(text) == text


# ------------------------------------------------------------------ URLs escaped or percent-encoded


LETTERS = st.text(string.ascii_letters, min_size=4, max_size=16)


@given(
    st.sampled_from(["postgres", "mysql", "redis", "https", "mongodb+srv"]), USERS, LETTERS, st.integers(0, 4)
)
@SETTINGS
def test_a_urls_password_of_letters_is_masked_however_the_url_is_encoded(
    scheme: str, user: str, value: str, framing: int
) -> None:
    url = f"{scheme}://{user}:{value}@db.internal:5432/app"
    text = [
        url,
        json.dumps({"dsn": url}).replace("/", "\\/"),  # PHP's and some loggers' JSON
        f"GET /connect?dsn={urllib.parse.quote(url, safe='')}&x=1",
        f"dsn={urllib.parse.quote(url, safe='')}",
        f"{scheme}:\\/\\/{user}:{value}@db",
    ][framing]
    assume(text.count(value) == 1 and value not in "".join(records("x").values()))
    assume(value.lower() not in text.lower().replace(value.lower(), "", 1))
    assert_masked(value, text)
    assert any(value in found for found in url_passwords(text)), text


@pytest.mark.parametrize(
    "text",
    [
        "https%3A%2F%2Fexample.com%2Fpath",
        "?next=https%3A%2F%2Fexample.com%3A8080%2Fpath%40x",
        "http:\\/\\/example.com\\/a@b",
        f"see {uuid.UUID(int=7)}@host",
    ],
)
def test_encoded_urls_without_a_password_stay(text: str) -> None:
    assert mask_text(text) == text and url_passwords(text) == []


@given(st.binary(min_size=40, max_size=300), st.sampled_from(["PUBLIC KEY", "CERTIFICATE", "RSA PUBLIC KEY"]))
@SETTINGS
def test_a_public_pem_block_stays_whole_and_line_by_line(body: bytes, kind: str) -> None:
    """A certificate's or a public key's body is public: base64 of a key's length, left as it is in the
    text and on each line a copier sees alone (64 characters wide)."""
    import base64
    import textwrap

    lines = textwrap.wrap(base64.b64encode(body).decode(), 64)
    assume(len(lines) == 1 or all(len(line) == 64 for line in lines[:-1]))
    block = "\n".join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"])
    assert mask_text(block) == block and scrub_text(block) == block
    for line in lines[:-1]:
        assert mask_text(line + "\n") == line + "\n"


# ------------------------------------------------------------------ t3rl's own command line


CMDLINE_PROBE = """
import atexit, os, sys
sys.argv = ["t3rl", *sys.argv[1:]]
parent = os.getpid()

def shown():
    if os.getpid() == parent:  # not a child forked to compose ahead
        with open("/proc/self/cmdline", "rb") as f:
            sys.__stderr__.write("CMDLINE " + repr(f.read()) + "\\n")

atexit.register(shown)
from launch.cli import main
main()
"""


@pytest.mark.parametrize(
    "override",
    [
        "++hardware.env_vars.DB_PASS={v}",  # a job variable: pre-flight warns, the run goes on
        "++hardware.env_vars.NOTE=postgres://bob:{v}@db.internal/app",
    ],
)
def test_a_credential_typed_on_t3rls_command_line_leaves_its_proc_cmdline(
    override: str, tmp_path: Path
) -> None:
    """`ps` and /proc/<pid>/cmdline, which every user of the machine reads, showed what was typed for the
    whole run; now the process's own argv memory is rewritten once pre-flight knows the value."""
    import subprocess
    import sys

    value = f"hunter{random.Random(override).randrange(10**9, 10**10)}x"
    done = subprocess.run(
        [sys.executable, "-c", CMDLINE_PROBE, "validate", "+experiment=quickstart", override.format(v=value)],
        cwd=tmp_path,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = [line for line in done.stderr.splitlines() if line.startswith("CMDLINE ")]
    assert len(shown) == 1, (done.returncode, done.stderr[-3000:])
    assert value not in shown[0] and "+experiment=quickstart" in shown[0], shown[0]
    assert override.format(v="***").replace("{v}", "***") in shown[0], shown[0]


def test_a_command_line_without_a_credential_is_left_as_it_is() -> None:
    from launch.config.secrets import hide_from_own_command_line

    with open("/proc/self/cmdline", "rb") as f:
        before = f.read()
    assume_nothing = hide_from_own_command_line()
    with open("/proc/self/cmdline", "rb") as f:
        assert f.read() == before and assume_nothing is False


@given(st.text(max_size=60), st.integers(0, 299), st.text(max_size=60))
@SETTINGS
def test_the_prefilter_never_skips_a_key_the_pattern_finds(before: str, seed: int, after: str) -> None:
    """`bare_key_spans` looks for 32 run characters in the text's bytes first (any text: accents, lone
    surrogates); with that check taken out (every text passes it) it finds the same spans."""
    from t3rl_core import secret_name_words

    text = before + " " + _drawn(seed, BASE64) + " " + after
    found = secret_name_words.bare_key_spans(text)
    mark, secret_name_words._RUN_MARK = secret_name_words._RUN_MARK, b""
    try:
        assert secret_name_words.bare_key_spans(text) == found
    finally:
        secret_name_words._RUN_MARK = mark
