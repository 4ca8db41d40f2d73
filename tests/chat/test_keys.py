"""Cache keys of tool lists and messages: equal values share a key, values rendered differently never do."""

from __future__ import annotations

import json
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat, tools_cache_key
from t3rl_core.chat.keys import json_key
from tests.rollout.fakes import TOOLS, qwen_chat  # noqa: F401


def test_equal_tool_lists_share_a_key() -> None:
    copied = [{**tool, "function": dict(tool["function"])} for tool in TOOLS]
    assert tools_cache_key(copied) == tools_cache_key(TOOLS)
    assert tools_cache_key(TOOLS[:1]) != tools_cache_key(TOOLS)
    assert tools_cache_key([]) == tools_cache_key(None)


def test_tool_lists_in_another_key_order_render_differently_and_get_other_keys(
    qwen_chat: ChatFormat,  # noqa: F811
) -> None:
    reordered = [{"function": tool["function"], "type": tool["type"]} for tool in TOOLS]
    messages = [{"role": "user", "content": "hi"}]
    assert qwen_chat.render(messages, reordered) != qwen_chat.render(messages, TOOLS)
    assert tools_cache_key(reordered) != tools_cache_key(TOOLS)
    qwen_chat.prompt_ids(messages, TOOLS)  # cached first: the reordered list must not reuse its ids
    assert qwen_chat.prompt_ids(messages, reordered) == qwen_chat.render_ids(
        messages, reordered, add_generation_prompt=True
    )


def test_sorted_keys_ignore_key_order() -> None:
    assert json_key({"b": 1, "a": [1, 2]}, sort_keys=True) == json_key({"a": [1, 2], "b": 1}, sort_keys=True)
    assert json_key({"b": 1, "a": 2}) != json_key({"a": 2, "b": 1})


def test_values_beyond_orjson_keep_distinct_keys() -> None:
    huge = 2**70
    assert json_key([huge, "x"]) == f'[{huge},"x"]'
    assert json_key([huge]) != json_key([huge + 1])
    assert json_key({"when": object}) == json_key({"when": str(object)})  # unserialisable leaves: str()


def _json_key_with_non_str_keys(value: Any, *, sort_keys: bool = False) -> str:
    """json_key as it was: orjson with OPT_NON_STR_KEYS always, json for what orjson refuses."""
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(value, default=str, option=option).decode()
    except TypeError:
        return json.dumps(value, sort_keys=sort_keys, default=str, ensure_ascii=False, separators=(",", ":"))


class _Text(str):
    """A str subclass, as a key or a value."""


_KEYS = (
    st.text(max_size=4)
    | st.integers(-3, 3)
    | st.booleans()
    | st.none()
    | st.floats(-2, 2)
    | st.builds(_Text, st.text(max_size=3))
)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=6)
    | st.sampled_from([object, Ellipsis, (1, "a")])
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None)
@given(_VALUES, st.booleans())
def test_keys_are_those_written_with_non_str_keys_on(value: Any, sort_keys: bool) -> None:
    """The str-keys-first path gives the same key as OPT_NON_STR_KEYS always did (or refuses alike)."""
    try:
        expected: str | type[Exception] = _json_key_with_non_str_keys(value, sort_keys=sort_keys)
    except Exception as exc:  # what the old key raised, the new one must raise too
        expected = type(exc)
    try:
        got: str | type[Exception] = json_key(value, sort_keys=sort_keys)
    except Exception as exc:
        got = type(exc)
    assert got == expected
