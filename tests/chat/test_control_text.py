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


# Tokens whose texts JSON escapes ('"', '\\', a newline): a tool's JSON does not show them as they are.
_ESCAPED = [*_FEW_FIRSTS, '<q"x>', "<b\\s>", "<n\ny>"]


def _tool_values(tokens: list[str]) -> st.SearchStrategy[object]:
    """Tool-like values: dicts with text keys, lists and tuples, texts of tokens, their halves, the
    noncharacters, lone surrogates and characters JSON escapes; numbers, booleans, None."""
    halves = [token[: len(token) // 2] for token in tokens] + [token[len(token) // 2 :] for token in tokens]
    text = st.lists(
        st.sampled_from([*tokens, *halves, _HIDDEN, "\ufdd1", "\ud800", '"', "\\", "\n", "<", "a", "語"]),
        max_size=4,
    ).map("".join)
    leaves = text | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(allow_nan=False)
    return st.recursive(
        leaves,
        lambda inner: (
            st.dictionaries(text, inner, max_size=3) | st.lists(inner, max_size=3) | st.tuples(inner, inner)
        ),
        max_leaves=6,
    )


@settings(max_examples=100, deadline=None)
@given(data=st.data(), escaped=st.booleans())
def test_a_tool_whose_json_shows_none_is_left_as_it_is(data: st.DataObject, escaped: bool) -> None:
    """ChatFormat._rendered_tool skips the two walks of a tool (`scalar_value`, `hide_value`) when its
    orjson text shows they change nothing: that must hold whenever it says so, also for tokens whose
    texts JSON escapes (then it never says so) and for texts orjson refuses (lone surrogates)."""
    import orjson

    from t3rl_core.chat.scalar_text import scalar_value

    tokens = _ESCAPED if escaped else _FEW_FIRSTS
    value = data.draw(_tool_values(tokens))
    control = ControlText(tokens, _encode)
    try:
        text = orjson.dumps(value).decode()
    except TypeError:  # refused (a lone surrogate): the walks run
        return
    assert scalar_value(value) is value  # orjson writes no lone surrogate
    if control.json_shows_none(text):
        assert control.hide_value(value) is value
    if not escaped and control.hide_value(value) is value:  # and it says so for a plain tool
        assert control.json_shows_none(text)


def test_json_shows_none_of_tokens_json_escapes() -> None:
    """The cases the property test may not draw: a token's text whose JSON is escaped, whole inside a
    key, a value or a list, is hidden by `hide_value`, so its JSON must not pass as showing none."""
    import orjson

    control = ControlText(_ESCAPED, _encode)
    for value in ({"d": 'see <q"x> here'}, {"k<b\\s>": 1}, ["<n\ny>"], {"plain": ["text", 1]}):
        if control.json_shows_none(orjson.dumps(value).decode()):
            assert control.hide_value(value) is value
    plain = ControlText(_FEW_FIRSTS, _encode)
    assert plain.json_shows_none(orjson.dumps({"plain": ["text", 1]}).decode())
    assert not plain.json_shows_none(orjson.dumps({"d": "a <tool_call> b"}).decode())
