"""`secret_prose.folded_key_spans` reads each run back from a line break it finds (b938e33); as first
written (633faa3) a pattern was tried at every place of the text. Both must find the same folds: the
first way is kept here as the reference, over texts made of what folds are made of."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core import secret_prose

# A run ending a line, as 633faa3 searched for it (from every character of the text).
_PIECE_END = r"([A-Za-z0-9][A-Za-z0-9+/_=-]*)" + secret_prose._BREAK


def spans_trying_every_place(text: str) -> list[tuple[int, int]]:
    """633faa3's folded_key_spans, with the stops added to it since."""
    if "\n" not in text and "\\n" not in text:
        return []
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        end_match = re.compile(_PIECE_END).search(text, pos)
        if end_match is None:
            return spans
        first = end_match.start(1)
        if first and text[first - 1] == "\\" and text[first] in "nrt":
            first += 1
        pieces = [(first, end_match.end(1))]
        indented, margin, cursor = True, "", end_match.end()
        while True:
            start_match = re.compile(secret_prose._PIECE_START).match(text, cursor)
            if start_match is None or not start_match.group(1):
                break
            indent = text[cursor : start_match.start(1)]
            if len(pieces) > 1 and indent != margin:
                break
            if secret_prose._own_line(text, start_match.start(1)):
                break  # wave nine's stop (771d08a): a line that begins as a record of its own
            margin = indent
            indented = indented and bool(indent)
            pieces.append(start_match.span(1))
            next_line = re.compile(secret_prose._BREAK).match(text, start_match.end(1))
            if next_line is None:
                break
            cursor = next_line.end()
        pos = end_match.end()
        if len(pieces) > 1 and secret_prose._folded_key(text, pieces, indented):
            spans += pieces
            pos = pieces[-1][1]


KEY = "Zq8xL0vTn3WkRb7YpHc2MfJd9GsAe4Ut"  # 32 random-looking base62 characters
PIECES = st.sampled_from(
    [
        KEY[:20],
        KEY[20:],
        KEY[:16],
        KEY[16:],
        KEY,
        "Ab3-x_Y9",
        "a/b/c",
        "+/=",
        "-",
        "_",
        "=",
        "===",
        "n",
        "rn",
        "abc",
        "A1",
        "9",
        "/tmp/run/x",
        "raysubmit_ab12",
        "deadbeef" * 2,
        "\\",
        "\\n",
        "\\r\\n",
        "\\t",
    ]
)
GLUE = st.sampled_from(
    ["", "", " ", "  ", "\t", "\n", "\r\n", "\n  ", "\n    ", ":", "'", '"', ".", "@", "- "]
)
TEXTS = st.lists(st.tuples(PIECES, GLUE), max_size=40).map(lambda parts: "".join(a + b for a, b in parts))


@given(TEXTS)
@settings(max_examples=800, deadline=None)
def test_the_folds_are_those_of_trying_every_place(text: str) -> None:
    assert secret_prose.folded_key_spans(text) == spans_trying_every_place(text)


@pytest.mark.parametrize(
    "text",
    [
        f"key:\n  {KEY[:20]}\n  {KEY[20:]}\n",
        f'{{"error": "x\\n  {KEY[:20]}\\n  {KEY[20:]}\\n"}}',  # JSON-escaped breaks
        f"value = {KEY[:18]}\n  {KEY[18:]}\n  ab\n",
        f"a/b/c/{KEY}\n  {KEY[:8]}\n",
        f"x +{KEY[:18]}\n  {KEY[18:]}\n",  # a sign before the run's first letter
        "\n".join(f"  {KEY[:20]}" for _ in range(20)) + "\n",  # a chain longer than any key
    ],
)
def test_each_framing_finds_what_trying_every_place_found(text: str) -> None:
    assert secret_prose.folded_key_spans(text) == spans_trying_every_place(text)
