"""Chat templates rendered without transformers give transformers' text, and the tokenizer wrapper its ids."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.template import compile_template, render_template
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.chat.tokenizer import LocalTokenizer
from tests.rollout.fakes import TOOLS

CONVERSATIONS = [
    [{"role": "user", "content": "Hi — wörld <b>&</b>"}],
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Add 1 and 2.", "name": None},
        {"role": "assistant", "content": "<tool_call>\n{}\n</tool_call>", "reasoning_content": "plan"},
        {"role": "tool", "content": "3"},
        {"role": "assistant", "content": "3.", "thinking": "done"},
        {"role": "user", "content": "Thanks."},
    ],
    [
        {"role": "user", "content": "List files."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "ls", "arguments": {"a": 1}}}],
        },
        {"role": "tool", "content": "a.txt"},
    ],
]


def reference_tokenizer(chat: ChatFormat) -> Any:
    """transformers' own tokenizer of the same files."""
    # lazy: transformers imports torch, which at the top loaded at collection in every xdist worker
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(chat.tokenizer.name_or_path, local_files_only=True)


@pytest.mark.parametrize("tools", [None, TOOLS])
@pytest.mark.parametrize("generation_prompt", [False, True])
def test_render_equals_transformers_apply_chat_template(
    chat: ChatFormat, tools: list | None, generation_prompt: bool
) -> None:
    reference = reference_tokenizer(chat)
    for messages in CONVERSATIONS:
        expected = reference.apply_chat_template(
            messages,
            tools=tools,
            chat_template=chat.template,
            add_generation_prompt=generation_prompt,
            tokenize=False,
        )
        assert chat.render(messages, tools, add_generation_prompt=generation_prompt) == expected


def test_local_tokenizer_agrees_with_transformers(chat: ChatFormat) -> None:
    reference = reference_tokenizer(chat)
    local = chat.tokenizer
    assert isinstance(local, LocalTokenizer)
    assert len(local) == len(reference)
    assert local.get_vocab() == reference.get_vocab()
    assert local.special_tokens_map == reference.special_tokens_map
    assert set(reference.all_special_tokens) <= set(local.all_special_tokens)
    assert local.chat_template == reference.chat_template
    text = chat.render(CONVERSATIONS[1], TOOLS, add_generation_prompt=True)
    ids = local.encode(text)
    assert ids == reference.encode(text, add_special_tokens=False)
    assert local.decode(ids) == reference.decode(ids, skip_special_tokens=False)
    assert local.convert_tokens_to_ids(chat.family.eos_token) == reference.convert_tokens_to_ids(
        chat.family.eos_token
    )


def test_generation_blocks_render_their_body() -> None:
    template = "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}"
    text = render_template(
        compile_template(template),
        [{"role": "assistant", "content": "a"}, {"role": "assistant", "content": "b"}],
        None,
        add_generation_prompt=False,
        variables={},
    )
    assert text == "[a][b]"


def test_dict_keys_read_as_attributes_as_jinja_reads_them() -> None:
    """A dict's own names (`items`) stay its methods, other names are its keys or undefined, and a
    dunder still goes through the sandbox, exactly as in Jinja's own sandboxed environment."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    source = (
        "{% for m in messages %}{{ m.role }}|{{ m.items is callable }}|{{ m.missing is defined }}|"
        "{{ m.get('role') }}|{{ m.content.upper() }};{% endfor %}"
    )
    messages = [{"role": "user", "content": "hi", "items": "shadowed"}, {"role": "tool", "content": "x"}]
    stock = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(source)
    ours = render_template(
        compile_template(source), messages, None, add_generation_prompt=False, variables={}
    )
    assert ours == stock.render(messages=messages) == "user|True|False|user|HI;tool|True|False|tool|X;"


def test_templates_stay_sandboxed() -> None:
    escape = "{{ messages.__class__.__mro__ }}"
    with pytest.raises(Exception, match=r"unsafe|not safely|access"):
        render_template(compile_template(escape), [], None, add_generation_prompt=False, variables={})


def test_loading_a_chat_format_imports_no_transformers_or_torch() -> None:
    code = (
        "import sys\n"
        "from t3rl_core.chat.format import ChatFormat\n"
        f"chat = ChatFormat.from_pretrained({str(shared_tokenizer_dir('qwen3'))!r}, 'qwen3')\n"
        "chat.prompt_ids([{'role': 'user', 'content': 'hi'}])\n"
        "print(sorted(m for m in ('transformers', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
