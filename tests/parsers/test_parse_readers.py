"""The tool-call parser's readers against their plain definitions, on generated inputs: a pair's tags
alternate (`_alternate`), an object's keys are each written once (`_unique_keys`)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.parsers import tool_calls
from t3rl_core.parsers.render import FORMATS

_PAIRS = sorted(
    {(fmt.call_open, fmt.call_close) for fmt in FORMATS.values() if fmt.call_open and fmt.call_close}
    | {(fmt.block_open, fmt.block_close) for fmt in FORMATS.values() if fmt.block_open and fmt.block_close}
)


def _alternate_by_definition(order: re.Pattern[str], text: str) -> bool:
    """Each tag in text order: an opener at even places, a closer at odd ones."""
    return all(bool(tag.group(1)) == (i % 2 == 0) for i, tag in enumerate(order.finditer(text)))


@pytest.mark.parametrize(("opener", "closer"), _PAIRS)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_tags_alternate_as_defined(opener: str, closer: str, data: st.DataObject) -> None:
    order = re.compile(f"({re.escape(opener)})|{re.escape(closer)}")
    pieces = st.sampled_from([opener, closer, "x", "\n", opener[:-1], closer[1:], ""])
    text = "".join(data.draw(st.lists(pieces, max_size=8)))
    assert tool_calls._alternate(order, text) == _alternate_by_definition(order, text), text


def _unique_keys_by_definition(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise tool_calls.AmbiguousJSON(f"the key {', '.join(map(repr, twice))} appears twice in one object")
    return dict(pairs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "", "é"]), st.integers(0, 3)), max_size=6))
def test_keys_written_twice_are_refused_as_defined(pairs: list[tuple[str, Any]]) -> None:
    try:
        expected: Any = _unique_keys_by_definition(pairs)
    except tool_calls.AmbiguousJSON as exc:
        expected = str(exc)
    try:
        got: Any = tool_calls._unique_keys(pairs)
    except tool_calls.AmbiguousJSON as exc:
        got = str(exc)
    assert repr(got) == repr(expected)
