"""URL passwords are found and masked by searching only the runs of text without whitespace that hold
`://`: the same passwords as the pattern tried at every place of the whole text, in the same order, in
time that grows with the text rather than with the square of its longest word."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core import secret
from t3rl_core.secret import _URL_USERINFO, MASK, mask_url, url_passwords

# The characters the pattern and the runs turn on, plus pieces of real URLs, so random texts often hold
# one or several URLs in one word, or split by a space or a line break.
PIECES = st.sampled_from(
    ["://", "http", "s3", "u", "p@ss", "@", ":", "/", " ", "\n", "\t", "+", ".", "-", "h.io", MASK]
)
TEXTS = st.lists(PIECES, max_size=24).map("".join)


def _whole_text_passwords(text: str) -> list[str]:
    return [m.group(2) for m in _URL_USERINFO.finditer(text) if m.group(2) != MASK]


@given(TEXTS)
@settings(max_examples=400, deadline=None)
def test_the_runs_find_what_the_whole_text_holds(text: str) -> None:
    found = url_passwords(text)
    expected = _whole_text_passwords(text)
    # url_passwords also reports passwords of URLs without a scheme, before the others: the scheme's
    # ones come last, in order.
    assert found[len(found) - len(expected) :] == expected


@given(TEXTS)
@settings(max_examples=400, deadline=None)
def test_masking_the_runs_masks_what_the_whole_text_would(text: str) -> None:
    if "@" not in text:  # the passwords of URLs without a scheme are masked by other rules first
        assert mask_url(text) == _URL_USERINFO.sub(rf"\1:{MASK}@", text)


class _CountingPattern:
    """`_URL_USERINFO`, counting the characters each search is given."""

    def __init__(self) -> None:
        self.read = 0

    def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[re.Match[str]]:
        endpos = len(text) if endpos is None else endpos
        self.read += endpos - pos
        return _URL_USERINFO.finditer(text, pos, endpos)

    def sub(self, replacement: str, text: str) -> str:
        self.read += len(text)
        return _URL_USERINFO.sub(replacement, text)


def test_the_pattern_reads_only_the_words_that_hold_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tried at every place of a 10,000-letter value, the pattern read the word again from each of its
    # letters (0.26 s; a minute for 100,000): it is given only the words holding `://`.
    counting = _CountingPattern()
    monkeypatch.setattr(secret, "_URL_USERINFO", counting)
    word = "a" * 100_000
    assert url_passwords(word) == [] and mask_url(word) == word and counting.read == 0
    text = f"{word} x://u:p@h {word}"
    assert url_passwords(text) == ["p"] and mask_url(text) == f"{word} x://u:{MASK}@h {word}"
    assert counting.read == 2 * len("x://u:p@h")
