"""ControlText's first-character pre-check answers as the full search does: with few distinct first
characters (the scan first) and with many (the search alone), on texts made of tokens, their halves,
the stand-in character and plain characters."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.control_text import _HIDDEN, ControlText

_FEW_FIRSTS = ["<|im_end|>", "<|im_start|>", "<tool_call>", "</think>", "[gMASK]"]
_MANY_FIRSTS = [*_FEW_FIRSTS, "{x}", "(y)", "#z#", "@w", "!v!"]


def _encode(text: str) -> list[int]:
    """A stand-in tokenizer: one id per character, each call's ids offset so that the cuts show."""
    return [ord(character) for character in text] + [-1]


def _texts(tokens: list[str]) -> st.SearchStrategy[str]:
    halves = [token[: len(token) // 2] for token in tokens] + [token[len(token) // 2 :] for token in tokens]
    pieces = st.sampled_from([*tokens, *halves, _HIDDEN, "<", "[", "a", " ", "語", "\n"])
    return st.lists(pieces, max_size=8).map("".join)


def _reference(tokens: list[str], text: str) -> tuple[bool, list[int], str]:
    """(holds a token or the stand-in, encode_text's ids, hide's content) by the search alone."""
    ordered = sorted(tokens, key=len, reverse=True)
    find = re.compile("|".join([*map(re.escape, ordered), re.escape(_HIDDEN)]))
    starts = [m.start() + 1 for m in re.finditer("(?=(?:" + "|".join(map(re.escape, ordered)) + "))", text)]
    ids: list[int] = []
    for start, end in zip([0, *starts], [*starts, len(text)], strict=True):
        ids += _encode(text[start:end])
    return find.search(text) is not None, ids, find.sub(_HIDDEN, text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), many=st.booleans())
def test_the_pre_check_answers_as_the_search(data: st.DataObject, many: bool) -> None:
    tokens = _MANY_FIRSTS if many else _FEW_FIRSTS
    text = data.draw(_texts(tokens))
    control = ControlText(tokens, _encode)
    holds, ids, hidden_content = _reference(tokens, text)
    assert control.holds_control_text(text) is holds
    assert control.encode_text(text) == ids
    masked, hidden = control.hide([{"role": "tool", "content": text}])
    assert masked[0]["content"] == hidden_content
    assert (hidden != []) is holds
