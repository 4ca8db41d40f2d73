"""Cache keys of tool lists and messages: equal values share a key, values rendered differently never do."""

from __future__ import annotations

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
