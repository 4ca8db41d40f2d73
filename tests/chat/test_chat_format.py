"""ChatFormat: shipped templates render each family's format, and TITO deltas match full renders."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.chat import format as chat_format
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.shipped import load_template, shipped_templates
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import ChatConfig

TOOLS = [{"type": "function", "function": {"name": "ls", "description": "List files.", "parameters": {}}}]
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "List my files."},
    {"role": "assistant", "content": "<think>\nuse ls\n</think>\n\ncalling"},
    {"role": "tool", "content": "a.txt"},
    {"role": "tool", "content": "b.txt"},
    {"role": "assistant", "content": "You have a.txt and b.txt."},
    {"role": "user", "content": "Thanks."},
]


def test_every_family_has_a_shipped_template() -> None:
    assert shipped_templates() == sorted(FAMILIES)


def test_unknown_template_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown chat template 'qwen9'.*qwen3"):
        load_template("qwen9")


def test_from_config_uses_the_named_template() -> None:
    config = ChatConfig(tokenizer=str(shared_tokenizer_dir("llama3")), chat_template="llama3")
    chat = ChatFormat.from_config(config)
    assert chat.family.name == "llama3"
    assert chat.render(CONVERSATION[:2]).startswith("<|begin_of_text|><|start_header_id|>system")


def test_tokenizer_own_template_and_family_detection() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("deepseek_v3"))
    assert chat.family.name == "deepseek_v3"
    assert chat.template == load_template("deepseek_v3")


def test_qwen_format(qwen_chat: ChatFormat) -> None:
    text = qwen_chat.render(CONVERSATION, TOOLS, add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert '\n<tools>\n{"type": "function", "function": {"name": "ls"' in text
    # tool results of one step form a single user turn
    assert (
        "<|im_start|>user\n<tool_response>\na.txt\n</tool_response>\n<tool_response>\nb.txt\n</tool_response>"
        "<|im_end|>\n" in text
    )
    # reasoning in history is kept verbatim
    assert "<|im_start|>assistant\n<think>\nuse ls\n</think>\n\ncalling<|im_end|>\n" in text
    assert text.endswith("<|im_start|>user\nThanks.<|im_end|>\n<|im_start|>assistant\n")


def test_qwen3_without_thinking_opens_turns_with_an_empty_think_block() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3", enable_thinking=False)
    text = chat.render(CONVERSATION[:2], add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    rendered = chat.render([*CONVERSATION[:2], {"role": "assistant", "content": "Hi"}])
    assert rendered.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\nHi<|im_end|>\n")


def test_qwen2_5_has_its_default_system() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen2_5"), "qwen2_5")
    assert chat.render(CONVERSATION[1:2]).startswith(
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
    )


def test_llama3_format() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("llama3"), "llama3")
    text = chat.render(CONVERSATION, TOOLS, add_generation_prompt=True)
    assert text.startswith(
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
    )
    # tools are offered in the first user turn, results come back in the ipython role
    first_user = text.index("<|start_header_id|>user<|end_header_id|>\n\n")
    assert text.index('"name": "ls"') > first_user
    assert "<|start_header_id|>ipython<|end_header_id|>\n\na.txt<|eot_id|>" in text
    assert text.endswith("Thanks.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")


def test_glm4_format() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("glm4"), "glm4")
    text = chat.render(CONVERSATION, TOOLS, add_generation_prompt=True)
    assert text.startswith("[gMASK]<sop><|system|>\n# Tools")
    assert text.count("<|observation|>") == 1  # one observation block for both results
    assert (
        "<|observation|>\n<tool_response>\na.txt\n</tool_response>\n<tool_response>\nb.txt\n</tool_response>"
        in text
    )
    assert text.endswith("<|user|>\nThanks.<|assistant|>")


def test_deepseek_v3_format() -> None:
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("deepseek_v3"), "deepseek_v3")
    text = chat.render(CONVERSATION, TOOLS, add_generation_prompt=True)
    assert text.startswith("<｜begin▁of▁sentence｜>Be brief.\n\n## Tools\n")
    assert (
        "calling<｜end▁of▁sentence｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>a.txt<｜tool▁output▁end｜>\n"
        "<｜tool▁output▁begin｜>b.txt<｜tool▁output▁end｜><｜tool▁outputs▁end｜>You have a.txt" in text
    )
    assert text.endswith("<｜User｜>Thanks.<｜Assistant｜>")


def test_assistant_tool_calls_render_in_the_family_format(chat: ChatFormat) -> None:
    call = {"type": "function", "function": {"name": "ls", "arguments": {"path": "/tmp"}}}
    text = chat.render([CONVERSATION[1], {"role": "assistant", "content": "", "tool_calls": [call]}], TOOLS)
    marker = {
        "qwen3": '"name": "ls"',
        "qwen2_5": '"name": "ls"',
        "llama3": '{"name": "ls", "parameters": {"path"',
    }
    marker |= {"glm4": "<tool_call>ls\n<arg_key>path</arg_key>", "deepseek_v3": "<｜tool▁sep｜>ls\n```json"}
    marker |= {"glm4_0414": '<|assistant|>ls\n{"path": "/tmp"}'}
    assert marker[chat.family.name] in text


@pytest.mark.parametrize("ended_by", ["stop", "length"])
def test_turn_deltas_equal_full_renders(chat: ChatFormat, ended_by: str) -> None:
    """prefix + model text + stop token + delta == render(prefix + [assistant] + new)."""
    history = CONVERSATION[:2]
    model_text = chat.family.turn_prefix + "Let me look."
    prefix = chat.render_ids(history, TOOLS, add_generation_prompt=True)
    model = chat.encode(model_text)
    last = model[-1]
    if ended_by == "stop":
        stop_name = chat.family.tool_turn_stop or chat.family.stop_tokens[0]
        model = [*model, chat.tokenizer.convert_tokens_to_ids(stop_name)]
        last = model[-1]
    new = [{"role": "tool", "content": "a.txt"}]
    delta = chat.turn_end_ids(last, new, add_generation_prompt=True)
    conversation = [*history, {"role": "assistant", "content": model_text}, *new]
    assert prefix + model + delta == chat.render_ids(conversation, TOOLS, add_generation_prompt=True)


def test_qwen_adds_only_the_newline_after_its_stop_token(qwen_chat: ChatFormat) -> None:
    im_end = qwen_chat.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert qwen_chat.decode(qwen_chat.turn_end_ids(im_end)) == "\n"
    # cut by length: the template's whole turn closing is added
    assert qwen_chat.decode(qwen_chat.turn_end_ids(qwen_chat.encode("x")[0])) == "<|im_end|>\n"


def test_delta_cost_does_not_depend_on_history(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[int] = []
    original = qwen_chat._render_delta

    def spy(messages, add_generation_prompt):
        rendered.append(len(messages))
        return original(messages, add_generation_prompt)

    monkeypatch.setattr(qwen_chat, "_render_delta", spy)
    qwen_chat.turn_end_ids(None, [{"role": "tool", "content": "x"}], add_generation_prompt=True)
    qwen_chat.turn_end_ids(None, [{"role": "user", "content": "y"}], add_generation_prompt=True)
    assert rendered == [3, 3]  # a fixed two-message base plus the new message, whatever came before


def test_fast_delta_render_agrees_with_apply_chat_template(chat: ChatFormat) -> None:
    messages = [*CONVERSATION, {"role": "tool", "content": "c.txt", "name": None}]
    for gen in (False, True):
        assert chat._render_delta(messages, gen) == chat.render(messages, add_generation_prompt=gen)


def test_model_text_drops_only_a_final_stop_token(qwen_chat: ChatFormat) -> None:
    ids = qwen_chat.encode("<tool_call>\nhi")
    im_end = qwen_chat.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert qwen_chat.model_text([*ids, im_end]) == "<tool_call>\nhi"
    assert qwen_chat.model_text([im_end, *ids]) == "<|im_end|><tool_call>\nhi"


def test_tito_drift_locates_the_first_difference(qwen_chat: ChatFormat) -> None:
    messages = CONVERSATION[:2]
    tokens = qwen_chat.render_ids(messages, add_generation_prompt=True)
    assert qwen_chat.tito_drift(tokens, messages, add_generation_prompt=True) is None
    changed = [*tokens]
    changed[5] = changed[5] + 1
    assert qwen_chat.tito_drift(changed, messages, add_generation_prompt=True) == 5


def test_missing_stop_tokens_are_rejected(qwen_chat: ChatFormat) -> None:
    with pytest.raises(ValueError, match="lacks the turn-ending tokens"):
        ChatFormat(qwen_chat.tokenizer, template=load_template("llama3"), family_=FAMILIES["llama3"])


def test_the_fast_encode_gives_the_ids_of_a_plain_encode(chat: ChatFormat) -> None:
    """`encode` takes the tokenizer's offset-free path; its ids must be those of `Tokenizer.encode`."""
    assert chat._encode_fast is not None
    texts = [
        chat.render(CONVERSATION, TOOLS, add_generation_prompt=True),
        "  leading spaces, trailing\t\n",
        "ünïcödé 中文 emoji 🎉 and\r\nCRLF",
        "".join(chat.tokenizer.all_special_tokens) + "text between" + chat.tokenizer.all_special_tokens[0],
    ]
    for text in texts:
        assert chat.encode(text) == chat._backend.encode(text, add_special_tokens=False).ids


def test_tools_with_kept_json_render_exactly_like_plain_tools(chat: ChatFormat) -> None:
    from t3rl_core.chat.template import RenderedJSON

    kept = [RenderedJSON(tool) for tool in TOOLS]
    for _ in range(2):  # the second render reads the kept texts
        assert chat.render(CONVERSATION, kept, add_generation_prompt=True) == chat.render(
            CONVERSATION, TOOLS, add_generation_prompt=True
        )
    assert chat.prompt_ids(CONVERSATION[:2], TOOLS) == chat.render_ids(
        CONVERSATION[:2], TOOLS, add_generation_prompt=True
    )
    if chat.family.name == "qwen3":  # it writes each tool with a plain tojson
        assert kept[0].texts


def test_kept_json_describes_the_tool_as_it_was_when_kept(qwen_chat: ChatFormat) -> None:
    from t3rl_core.chat.template import RenderedJSON

    tool = {"type": "function", "function": {"name": "ls", "description": "List files.", "parameters": {}}}
    kept = RenderedJSON(tool)
    tool["function"]["name"] = "rm"  # the caller's later change does not reach the kept copy
    assert '"name": "ls"' in qwen_chat.render(CONVERSATION[:2], [kept])


DELTAS = [
    [{"role": "tool", "content": "a.txt", "name": "ls"}],
    [{"role": "tool", "content": "a.txt"}, {"role": "tool", "content": "b.txt"}],
    [{"role": "user", "content": "Thanks."}],
    [],
]


def test_cached_turn_deltas_are_the_fresh_ones(chat: ChatFormat) -> None:
    last_tokens = [None, chat.encode("x")[0], *chat.stop_token_ids]
    for messages in DELTAS:
        for last in last_tokens:
            for gen in (False, True):
                fresh = chat.encode(chat._turn_end_text(last, messages, gen))
                assert chat.turn_end_ids(last, messages, add_generation_prompt=gen) == fresh
                assert chat.turn_end_ids(last, messages, add_generation_prompt=gen) == fresh  # cached
                cached = asyncio.run(chat.turn_end_ids_async(last, messages, add_generation_prompt=gen))
                assert cached == fresh


def test_a_repeated_turn_delta_is_rendered_once(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered: list[int] = []
    original = qwen_chat._render_delta
    monkeypatch.setattr(qwen_chat, "_render_delta", lambda m, g: rendered.append(len(m)) or original(m, g))
    messages = [{"role": "tool", "content": "once-rendered delta"}]
    first = qwen_chat.turn_end_ids(None, messages, add_generation_prompt=True)
    first.append(-1)  # a caller's change never reaches the cache
    again = asyncio.run(qwen_chat.turn_end_ids_async(None, messages, add_generation_prompt=True))
    assert again == first[:-1]
    assert rendered == [3]


def test_deltas_render_afresh_for_unstable_templates_odd_messages_and_long_outputs(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    dated = ChatFormat(
        qwen_chat.tokenizer,
        template=load_template("qwen3") + "{% if false %}{{ strftime_now('%d') }}{% endif %}",
        family_=qwen_chat.family,
    )
    odd = [{"role": "tool", "content": "x", "name": None}]  # not all strings
    long = [{"role": "tool", "content": " ".join(f"w{i}" for i in range(chat_format._DELTA_MAX_TOKENS))}]
    for chat, messages in ((dated, [{"role": "tool", "content": "x"}]), (qwen_chat, odd), (qwen_chat, long)):
        rendered: list[int] = []
        spy = lambda m, g, o=chat._render_delta, r=rendered: r.append(1) or o(m, g)  # noqa: E731
        monkeypatch.setattr(chat, "_render_delta", spy)
        for _ in range(2):
            chat.turn_end_ids(None, messages, add_generation_prompt=True)
        assert rendered == [1, 1]


def test_kept_deltas_stay_within_their_id_budget_and_equal_fresh_renders(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = ChatFormat(qwen_chat.tokenizer, template=qwen_chat.template, family_=qwen_chat.family)
    monkeypatch.setattr(chat_format, "_DELTA_CACHE_TOKENS", 300)
    rendered: list[str] = []
    original = chat._render_delta
    monkeypatch.setattr(
        chat, "_render_delta", lambda m, g: rendered.append(m[-1]["content"]) or original(m, g)
    )
    # Long outputs of different lengths (two fill the budget), repeated after being dropped.
    outputs = [
        " ".join(f"{name}{i}" for i in range(size)) for name, size in (("a", 60), ("b", 90), ("c", 40))
    ]
    hits = dropped = 0
    for content in [*outputs, outputs[0], *outputs, outputs[2]]:
        messages = [{"role": "tool", "content": content}]
        fresh = qwen_chat.encode(qwen_chat._turn_end_text(None, messages, True))
        was_kept, seen, renders = (
            chat._delta_key(None, messages, True) in chat._deltas,
            content in rendered,
            len(rendered),
        )
        assert chat.turn_end_ids(None, messages, add_generation_prompt=True) == fresh
        assert len(rendered) == renders + (not was_kept)  # rendered again exactly when not kept
        hits, dropped = hits + was_kept, dropped + (seen and not was_kept)
        kept = sum(len(ids) for ids in chat._deltas.values())
        assert chat._delta_tokens == kept <= chat_format._DELTA_CACHE_TOKENS
    assert hits and dropped


def test_a_delta_kept_twice_is_counted_once(qwen_chat: ChatFormat) -> None:
    chat = ChatFormat(qwen_chat.tokenizer, template=qwen_chat.template, family_=qwen_chat.family)
    messages = [{"role": "tool", "content": "listing " * 50}]
    key = chat._delta_key(None, messages, True)
    ids = chat.encode(chat._turn_end_text(None, messages, True))
    chat._keep_delta(key, ids)
    chat._keep_delta(key, list(ids))  # two episodes missed it at once
    assert chat._delta_tokens == len(ids) and len(chat._deltas) == 1


def test_kept_prompt_ids_are_handed_out_as_copies(qwen_chat: ChatFormat) -> None:
    fresh = qwen_chat.render_ids(CONVERSATION[:2], TOOLS, add_generation_prompt=True)
    for prompt_ids in (
        lambda: qwen_chat.prompt_ids(CONVERSATION[:2], TOOLS),
        lambda: asyncio.run(qwen_chat.prompt_ids_async(CONVERSATION[:2], TOOLS)),
    ):
        first = prompt_ids()
        first.append(-1)  # an episode growing its token list from it
        assert prompt_ids() == fresh


def test_kept_tool_copies_are_deep_copies_of_any_value() -> None:
    """Plain data is copied by a marshal round trip, anything else by deepcopy: either way the copy
    equals deepcopy's, types and shared references included, and shares nothing mutable."""
    import copy
    from collections import OrderedDict

    from t3rl_core.chat.template import _deep_copy

    class Note:
        def __init__(self, text: str) -> None:
            self.text = text

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Note) and other.text == self.text

    shared = ["a", "b"]
    plain = {"enum": ("x", "y"), "ints": {1: 1.0, 2: True, "3": -0.0}, "twice": [shared, shared]}
    for value in (plain, {**plain, "ordered": OrderedDict(k=[1])}, {**plain, "note": Note("n")}):
        copied, expected = _deep_copy(value), copy.deepcopy(value)
        assert copied == expected and [type(v) for v in copied.values()] == [type(v) for v in value.values()]
        assert [type(v) for v in copied["ints"].values()] == [float, bool, float]
        assert copied["twice"][0] is copied["twice"][1] and copied["twice"][0] is not shared
        for key in ("ordered", "note"):
            if key in value:
                assert type(copied[key]) is type(value[key]) and copied[key] is not value[key]


def test_tool_lists_share_each_distinct_tool_and_render_as_plain_tools(chat: ChatFormat) -> None:
    """A tool held by several tool lists is kept once (one deep copy, one set of JSON texts)."""
    cat = {"type": "function", "function": {"name": "cat", "description": "Show a file.", "parameters": {}}}
    first, second = [*TOOLS, cat], [cat, {**cat, "function": {**cat["function"], "name": "head"}}]
    rendered = [chat._rendered_tools(tools, chat_format.tools_cache_key(tools)) for tools in (first, second)]
    assert rendered[0][1] is rendered[1][0] and rendered[1][0] is not rendered[1][1]
    for tools in (first, second):
        assert chat.prompt_ids(CONVERSATION[:2], tools) == chat.render_ids(
            CONVERSATION[:2], tools, add_generation_prompt=True
        )


def test_prompts_of_one_head_keep_its_ids_once(qwen_chat: ChatFormat) -> None:
    """Kept prompts hold their head's ids (system messages and tools: most of a tool-use prompt) by
    reference, and hand out the same ids as a fresh render."""
    asks = [[CONVERSATION[0], {"role": "user", "content": ask}] for ask in ("List my files.", "Show a.txt.")]
    for messages in asks:
        assert asyncio.run(qwen_chat.prompt_ids_async(messages, TOOLS)) == qwen_chat.render_ids(
            messages, TOOLS, add_generation_prompt=True
        )
    (*_, (head, first_rest), (again, second_rest)) = qwen_chat._prompt_cache.values()
    assert head is again and len(head) > max(len(first_rest), len(second_rest))
