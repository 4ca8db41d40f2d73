"""Engine kinds of round eleven: whatever body a /generate server answers with HTTP 200 is a Generation
or the engine's BadResponse (retried, then the episode's engine failure), never another exception: a
body nested past json's recursion raised RecursionError out of the engine, unretried, in Python's words."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.engines.base import Generation
from t3rl_core.engines.sglang_http import BadResponse, parse_generation


@pytest.mark.parametrize("levels", [5_000, 100_000])
@pytest.mark.parametrize("opener", [b"[", b'{"a":'])
def test_a_body_nested_past_json_s_recursion_is_a_bad_response(levels: int, opener: bytes) -> None:
    with pytest.raises(BadResponse, match=r"nests more than \d+ levels deep; t3rl reads JSON from outside"):
        parse_generation(opener * levels)


_KEYS = st.sampled_from(
    ["text", "meta_info", "finish_reason", "type", "output_token_logprobs", "error", "message", "length"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=25,
)


def _body(value: Any, deep: int, cut: int) -> bytes:
    text = json.dumps(value)
    if deep:
        text = "[" * deep + text + "]" * deep
    return text.encode()[: len(text) - cut] if cut else text.encode()


@settings(max_examples=300, deadline=None)
@given(value=_JSON, deep=st.sampled_from([0, 0, 10, 5_000]), cut=st.sampled_from([0, 0, 1, 7]))
def test_every_body_is_a_generation_or_a_bad_response(value: Any, deep: int, cut: int) -> None:
    """Partial JSON (a body cut short), any shape, any nesting."""
    try:
        generation = parse_generation(_body(value, deep, cut))
    except BadResponse as exc:
        assert str(exc)
    else:
        assert isinstance(generation, Generation)
