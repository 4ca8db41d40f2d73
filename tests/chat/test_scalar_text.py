"""Scalar text: every lone surrogate becomes U+FFFD, anything else is left as it is (the same object),
whatever the text's width (ASCII, Latin-1, BMP, astral), against the plain definition."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.scalar_text import REPLACEMENT, scalar_message, scalar_text

_CHARS = st.sampled_from(
    ["a", "{", "\n", "é", "\xff", "’", "\ud7ff", "\ud800", "\udbff", "\udc00", "\udfff", "\ue000", "😀"]
)


def _by_definition(text: str) -> str:
    return "".join(REPLACEMENT if 0xD800 <= ord(char) <= 0xDFFF else char for char in text)


@settings(max_examples=400, deadline=None)
@given(st.lists(_CHARS, max_size=12).map("".join), st.text(max_size=8))
def test_scalar_text_is_the_definition(drawn: str, any_text: str) -> None:
    for text in (drawn, any_text):
        expected = _by_definition(text)
        got = scalar_text(text)
        assert got == expected
        if expected == text:
            assert got is text  # nothing to replace: the same object
        message = {"role": "tool", "content": text, "name": "f", "n": 1}
        scalar = scalar_message(message)
        assert scalar == {**message, "content": expected}
        assert (scalar is message) == (expected == text)
