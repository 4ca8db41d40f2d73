"""The credentials rule and `launch.config.secrets.secrets_in` scan a config's texts joined into one first
(t3rl_core.secret_shapes.any_credentials_in) and each on its own only when that text holds a credential:
the joined text must hold one wherever any of its parts does, whatever stands around the separator
(adversarial parts: shapes cut at the edges, headers and assignments split across two parts,
references, quotes and line breaks at the joins)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config import secrets
from t3rl_core import secret_shapes
from t3rl_core.secret_shapes import SEPARATOR, any_credentials_in, credentials_in

PIECES = (
    "sk-" + "Ab3" * 8,
    "hf_" + "x1" * 16,
    "eyJabcdefghij.eyJabcdefghij.abcdefghij",
    "sk-proj-Ab12…",
    "?token=abc123def456",
    "&sig=Zz9Zz9Zz9",
    "Authorization: Bearer abcd1234efgh",
    "Authorization:",
    "Bearer",
    " abcd1234efgh",
    "x-api-key=",
    "api_key=",
    "HF_TOKEN=",
    "password: 'a1b2c3d4e5'",
    "--api-key",
    " a1b2c3d4e5f6",
    "https://ghp_" + "a1" * 12 + "@github.com/x",
    "https://user:pa55w0rd@host",
    "env:HF_TOKEN",
    "${oc.env:X}",
    "file:/run/key",
    "***",
    "task_id",
    "desk-lamp",
    "monkey=a1b2c3d4e5",
    "\n",
    " ",
    "'",
    '"',
    "=",
    ":",
    "-",
    "_",
    "a",
    "7",
    "…",
)
TEXT = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)


@given(st.lists(TEXT, min_size=1, max_size=6))
@settings(max_examples=500, deadline=None)
def test_the_joined_text_holds_a_credential_wherever_a_part_does(parts: list[str]) -> None:
    if any(credentials_in(part) for part in parts):
        assert any_credentials_in(parts)


def test_texts_run_together_hide_a_credential() -> None:
    """What the separator is for: two tokens joined without one read as one word, and neither is
    found."""
    parts = ["hf_" + "x1" * 16] * 2
    assert credentials_in(parts[0]) and not credentials_in("".join(parts))
    assert credentials_in(SEPARATOR.join(parts))


KEYS = st.sampled_from(["url", "api_key", "name", "extra_args", "env_vars"])
CONFIG = st.recursive(
    TEXT | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


@given(CONFIG)
@settings(max_examples=300, deadline=None)
def test_secrets_in_finds_what_a_scan_of_each_text_finds(config: object) -> None:
    assert secrets.secrets_in(config) == secrets._secrets_in(config, "", shaped=True, urls=True)


def test_secrets_in_scans_a_config_without_credentials_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counted(text: str) -> list[str]:
        calls.append(text)
        return credentials_in(text)

    monkeypatch.setattr(secret_shapes, "credentials_in", counted)
    monkeypatch.setattr(secrets, "credentials_in", counted)
    config = {"model": {"name": "qwen3_8b", "hf_checkpoint": "models/Qwen3-8B"}, "tags": ["a", "b"]}
    assert secrets.secrets_in(config) == []
    assert len(calls) == 1
