"""The credentials rule scans a config's names and values joined into one text first
(launch.checks.rules.credentials._SEPARATOR) and each on its own only when that text holds a credential:
the joined text must hold one wherever any of its parts does, whatever stands around the separator
(adversarial parts: shapes cut at the edges, headers and assignments split across two parts,
references, quotes and line breaks at the joins)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.checks.rules.credentials import _SEPARATOR
from t3rl_core.secret_shapes import credentials_in

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
        assert credentials_in(_SEPARATOR.join(parts))


def test_texts_run_together_hide_a_credential() -> None:
    """What the separator is for: two tokens joined without one read as one word, and neither is
    found."""
    parts = ["hf_" + "x1" * 16] * 2
    assert credentials_in(parts[0]) and not credentials_in("".join(parts))
    assert credentials_in(_SEPARATOR.join(parts))
