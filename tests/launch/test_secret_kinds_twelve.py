"""Credentials round eleven left unmasked (docs/how-to/secrets.md, Limits), each kind generated in many
shapes and checked in every record kind but an episode's own text (the task's data):

- a key of the base64url alphabet (`-`, `_`) known by its look alone;
- a value prose gives a credential's name (`the api key is V`, `api key V`, `password V`), however short;
- a key folded over lines (a renderer's width, a YAML scalar, a log's indented continuation);
- `user:password@host` in prose whatever the password (`connect as alice:password@db today`).

And what must stay: hashes, UUIDs, ids one a line, identifiers of the standard library and of t3rl,
prose without a value, a mail's subject (`re:hello@team`), code's slices and digests' addresses.
Each masking test fails at the parent commit (t3rl_core.secret_prose did not exist).
"""

from __future__ import annotations

import json
import random
import string

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from launch.config.secrets import scrub_obj, scrub_text
from t3rl_core.eval.jsonl import record_line
from t3rl_core.secret import mask_episode_text, mask_text
from t3rl_core.secret_env import without_credentials
from t3rl_core.secret_prose import _key_piece, is_url_key
from tests.launch.test_secret_kinds_eight import assert_refused, records
from tests.support.source_identifiers import source_identifiers

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BASE62 = string.ascii_letters + string.digits
B64URL = BASE62 + "-_"


def _stays(text: str) -> None:
    assert mask_text(text) == text and scrub_text(text) == text, text


def _whole_text_records(text: str) -> dict[str, str]:
    """The records that see a text whole (not a line-by-line copier, which sees a fold in pieces)."""
    return {
        "scrub_text": scrub_text(text),
        "mask_text": mask_text(text),
        "scrub_obj": json.dumps(scrub_obj({"stage": {"note": text}})),
        "eval record": record_line({"task_id": "t", "error": text}),
    }


def _url_key(rng: random.Random) -> str:
    """A base64url key as issued (32 to 88 characters), holding at least one `-` or `_`."""
    while True:
        key = "".join(rng.choice(B64URL) for _ in range(rng.randint(32, 88)))
        if ("-" in key or "_" in key) and key[0] not in "-_" and key[-1] not in "-_":
            return key


FRAMINGS = [
    "{k}",
    "note: the key we were sent is {k} (rotate it)",
    "MODEL_OPTS={k}",
    "mytool --opts {k} run",
    '{{"value": "{k}"}}',
    "  File x.py, line 3, in f\n    connect('{k}')\nValueError: refused {k}",
    "export SOMETHING='{k}'",
]


def test_base64url_keys_drawn_at_random_are_masked_in_every_record_without_a_name() -> None:
    """300 fixed draws, each in one framing: at least 95 % are masked in every record (a line-by-line
    copier's too) and refused at pre-flight (a draw may lack a digit or hold a segment reading as a
    word: about 1 in 30)."""
    masked = 0
    for seed in range(300):
        key = _url_key(random.Random(seed))
        text = FRAMINGS[seed % len(FRAMINGS)].format(k=key)
        written = records(text, episode=False)
        if all(key not in out for out in written.values()):
            assert_refused(key, text)
            masked += 1
    assert masked >= 285, masked


def test_a_variable_holding_a_base64url_key_is_kept_from_untrusted_code() -> None:
    key = "dGhpc19pc19hX2Zlcm5ldF9rZXk-Xk9_aB3Qz7Lm2Pw"
    assert is_url_key(key)
    assert "MODEL_OPTS" not in without_credentials({"MODEL_OPTS": key, "PATH": "/usr/bin"})


NOT_URL_KEYS = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.text(BASE62, min_size=16, max_size=27).map(lambda s: "raysubmit_" + s),
    st.text(BASE62, min_size=32, max_size=48).map(lambda s: f"run_{s}"),
    st.text(BASE62, min_size=32, max_size=48).map(lambda s: f"ckpt-{s}"),
    st.from_regex(r"sha256=[A-Za-z0-9_-]{43}", fullmatch=True),
    st.sampled_from(
        [
            "Qwen3-30B-A3B-Instruct-2507-FP8",
            "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
            "test_a_variable_holding_a_base64url_key_is_kept",
            "PYTORCH_CUDA_ALLOC_CONF_EXPANDABLE_SEGMENTS_TRUE",
            "stage1_bfcl-20261128T084012Z-3f2a9c1",
            "t3rl-sandbox-4242-0-cell-2-zygote-starter-init",
            "NCCL_IB_HCA_mlx5_0_mlx5_1_mlx5_2_mlx5_3",
        ]
    ),
)


@given(st.lists(NOT_URL_KEYS, min_size=1, max_size=6), st.sampled_from([" ", "\n", ", ", "=", "\n  "]))
@SETTINGS
def test_names_ids_and_digests_with_dashes_and_underscores_stay(words: list[str], separator: str) -> None:
    text = separator.join(words)
    assert mask_text(text) == text and mask_episode_text(text) == text and scrub_text(text) == text, text


def test_no_identifier_of_the_standard_library_or_t3rl_reads_as_a_base64url_key() -> None:
    """Every snake_case, SCREAMING_CASE and kebab-case name of 32+ characters written in the standard
    library's modules and in t3rl's own: what a traceback or a log line prints."""
    names = source_identifiers(r"\b[A-Za-z][A-Za-z0-9_-]{31,}\b")
    assert sorted(name for name in names if is_url_key(name)) == []


# ------------------------------------------------------------------ a value named in prose

PROSE_NAMES = st.sampled_from(
    [
        "api key",
        "API key",
        "Api-Key",
        "access token",
        "token",
        "secret",
        "secret key",
        "password",
        "Password",
        "passphrase",
        "license key",
        "client secret",
        "credentials",
        "auth token",
        "private key",
    ]
)
CONNECTORS = st.sampled_from([" is ", " was ", ": ", " ", " = ", " is now ", " is '", ' is "', " is `"])
# Keys as issued (no `.` or `_`: a dotted or snake name after `key` is a name, `os.environ`).
SHORT_VALUES = st.text(BASE62 + "!#%^*~-", min_size=8, max_size=31).filter(
    lambda v: any(map(str.isalpha, v)) and any(map(str.isdigit, v)) and v[0].isalnum() and v[-1].isalnum()
)
PROSE = st.sampled_from(["{}", "Hi team, the {} - please rotate.", "FYI {}.", "note:\n{}\nthanks", "- {}"])


@given(PROSE_NAMES, CONNECTORS, SHORT_VALUES, PROSE)
@SETTINGS
def test_a_value_prose_gives_a_credentials_name_is_masked_however_short(
    name: str, connector: str, value: str, prose: str
) -> None:
    text = prose.format(f"{name}{connector}{value}")
    for where, written in records(text, episode=False).items():
        assert value not in written, (where, text, written)
    assert_refused(value, text)


@pytest.mark.parametrize(
    "text",
    [
        "max tokens 4096, temperature 0.7",
        "the token ids 151643 and 151645 end a turn",
        "the key point is clarity",
        "a password reset link was sent",
        "token 3f2a9c1d4e5b6a7980c1d2e3f4a5b6c7d8e9f0a1 pushed",
        "secret santa 2024",
        "the key is env:MY_API_KEY",
        "password: ${oc.env:DB_PASSWORD}",
        "token budget v2.1.0",
        "keys 1e-5 and 3e10",
        "the eos token is <|im_end|> (151645)",
        "every credential `t3rl_core.secret.mask_text` knows",
        "tokenizer_sha256 of the files",
        "the key os.environ holds",
    ],
)
def test_prose_without_a_credentials_value_stays(text: str) -> None:
    _stays(text)


@pytest.mark.parametrize(
    "framing",
    [
        "the API token for prod: {}",
        "access key id {}",
        "api key \u2014 {}",
        "api key -> {}",
        "passcode {}",
        "(api key {})",
        "[api_key: {}]",
        "bearer token {}",
    ],
)
def test_prose_names_with_a_qualifier_or_an_arrow_give_their_value(framing: str) -> None:
    value = "Xk9aB3Qz7Lm2Pw"
    text = framing.format(value)
    for where, written in records(text, episode=False).items():
        assert value not in written, (where, text, written)


def test_an_episodes_text_keeps_what_a_name_gives_a_value() -> None:
    """BFCL's tasks give the model made-up credentials in prose, which its calls pass on."""
    text = "Log in with the password securePass123 and the api key is abc123XYZ9"
    assert mask_episode_text(text) == text


# ------------------------------------------------------------------ a key folded over lines


def _fold(key: str, width: int, indent: str, first: str) -> str:
    pieces = [key[i : i + width] for i in range(0, len(key), width)]
    return first + pieces[0] + "".join(f"\n{indent}{piece}" for piece in pieces[1:])


@given(
    st.integers(0, 10_000),
    st.sampled_from([BASE62, B64URL, BASE62 + "+/"]),
    st.integers(12, 60),
    st.sampled_from(["  ", "    ", "\t"]),
    st.sampled_from(["key:\n  ", "note ", "aws_secret: >-\n  ", "", "    "]),
)
@SETTINGS
def test_a_key_folded_over_indented_lines_is_masked_in_every_piece(
    seed: int, alphabet: str, width: int, indent: str, first: str
) -> None:
    rng = random.Random(seed)
    key = "".join(rng.choice(alphabet) for _ in range(rng.randint(40, 120)))
    assume((is_url_key(key) if any(c in key for c in "-_") else _bare(key)) and key[0].isalnum())
    assume(not key.endswith(("-", "_", "+", "/")))
    text = _fold(key, width, indent, first) + "\nnext line"
    pieces = [key[i : i + width] for i in range(0, len(key), width)]
    # A line beginning with a word then `_`/`-` (`raysubmit_…`) reads as a name: such a fold is left.
    assume(all(_key_piece(piece) for piece in pieces))
    for where, written in _whole_text_records(text).items():
        for piece in pieces:
            if len(piece) >= 6:
                assert piece not in written, (where, piece, text, written)


def _bare(key: str) -> bool:
    from t3rl_core.secret_name_words import is_bare_key

    return is_bare_key(key)


def test_a_key_folded_at_the_line_start_with_a_long_piece_is_masked() -> None:
    key = "QrPTsDSuFEhbtyvAYmqgq5UGn9MB0bobzjcU9kCTGRBI1oOZSHCoHPbzRKZuQOBd"
    text = f"note {key[:30]}\n{key[30:]}"
    for written in _whole_text_records(text).values():
        assert key[:30] not in written and key[30:] not in written, written


def test_a_public_pem_body_and_ids_one_a_line_stay() -> None:
    body = "\n".join(
        [
            "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo",
            "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u",
            "+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyeh",
            "kd3qqGElvW/VDL5AaWTg0nLVkjRo9z+40RQzuVaE8AkAFmxZzow3x+VJYKdjykkJ",
            "0iT9wCS0DRTXu269V264Vf/3jvredZiKRkgwlL9xNAwxXFg0x/XFw005UWVRIkdg",
            "cKWTjpBP2dPwVZ4WWC+9aGVd+Gyn1o0CLelf4rEjGoXbAAEgAqeGUxrcIlbjXfbc",
            "mwIDAQAB",
        ]
    )
    pem = f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----"
    ids = "\n".join("".join(random.Random(i).choice(BASE62) for _ in range(27)) for i in range(6))
    for text in (pem, body, ids, "  " + ids.replace("\n", "\n  ")):
        assert mask_text(text) == text, text


# ------------------------------------------------------------------ user:password@host in prose

USERS = st.sampled_from(["alice", "postgres", "svc-deploy", "admin.ro", "bob", "deploy_bot"])
LETTER_PASSWORDS = st.text(string.ascii_letters, min_size=4, max_size=20).filter(
    lambda v: v.lower() not in {"pass", "passwd", "password", "secret", "xxxx"}
)
HOSTS = st.sampled_from(["db", "postgres", "redis", "mongo-1", "cache", "warehouse"])
SENTENCES = st.sampled_from(
    ["connect as {} today", "use {}.", "{}", "It fails with {}, see the log", "(try {})", "creds {}\nbye"]
)


@given(USERS, LETTER_PASSWORDS, HOSTS, SENTENCES)
@SETTINGS
def test_user_information_in_prose_is_masked_whatever_the_password(
    user: str, password: str, host: str, sentence: str
) -> None:
    text = sentence.format(f"{user}:{password}@{host}")
    for where, written in records(text, episode=False).items():
        assert f":{password}@" not in written, (where, text, written)
    assert_refused(password, text)


def test_the_brief_s_example_is_masked() -> None:
    assert mask_text("alice:password@db") == "alice:***@db"
    assert "password" not in scrub_text("connect as alice:password@db today")


@pytest.mark.parametrize(
    "text",
    [
        "re:hello@team",
        "Re:hello@team",
        "Fwd:update@team",
        "mailto:alice@example",
        "see user:password@host in the docs",
        "image: redis:alpine@sha256:0123456789abcdef",
        "y = x[lo:high@weights]",
        "lambda a:b@c",
        "sha256:deadbeef@cache",
        "at 12:30@home",
    ],
)
def test_what_is_no_user_information_in_prose_stays(text: str) -> None:
    _stays(text)


# ------------------------------------------------------------------ a webhook's key in a URL's path

HOOK_URLS = st.sampled_from(
    [
        "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D4E/{k}",
        "https://discord.com/api/webhooks/1234567890123456789/{k}",
        "https://outlook.office.com/webhook/0f8fad5b-d9cb-469f/IncomingWebhook/{k}/4d1f2a3b",
        "https://example.webhook.office.com/webhookb2/{k}",
        "https://ci.example.com/hooks/{k}?ref=main",
    ]
)


HOOK_FRAMINGS = st.sampled_from(["{}", "posting to {} failed: 404", '{{"url": "{}"}}'])


@given(HOOK_URLS, st.integers(0, 10_000), HOOK_FRAMINGS)
@SETTINGS
def test_a_webhooks_key_in_its_url_is_masked(url: str, seed: int, framing: str) -> None:
    rng = random.Random(seed)
    key = "".join(rng.choice(B64URL) for _ in range(rng.randint(24, 68)))
    assume(all(any(map(kind, key)) for kind in (str.isupper, str.islower, str.isdigit)))
    assume(key[0].isalnum() and not _bare_random_words(key))
    text = framing.format(url.format(k=key))
    for where, written in records(text, episode=False).items():
        assert key not in written, (where, text, written)
    assert_refused(key, text)


def _bare_random_words(key: str) -> bool:
    from t3rl_core.secret_name_words import _reads_as_words, looks_like_credential

    return _reads_as_words(key) or not looks_like_credential(key)


@pytest.mark.parametrize(
    "text",
    [
        "https://github.com/org/repo/settings/hooks/123456",
        "https://example.com/webhooks/api/v1/ModelRegistry2024Items",
        "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D4E",
        "https://huggingface.co/Qwen/Qwen3-4B-Instruct-2507/resolve/main/config.json",
    ],
)
def test_hook_urls_without_a_key_stay(text: str) -> None:
    _stays(text)
