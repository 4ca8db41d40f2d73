"""`t3rl_core.chat.check`: every shipped family passes; a template that breaks TITO, a parser that does not
read the template's calls, and a template that drops reasoning each fail their own check."""

from __future__ import annotations

from t3rl_core.chat.check import check_template
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.shipped import load_template
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import ParsersConfig


def failing(findings) -> list[str]:
    return [f.check for f in findings if not f.ok]


def test_every_shipped_family_passes_with_its_own_parsers(chat: ChatFormat) -> None:
    family = chat.family
    parsers = ParsersConfig(
        tool_call_parser=family.tool_call_parser, reasoning_parser=family.reasoning_parser
    )
    findings = check_template(chat, parsers)
    assert failing(findings) == [], findings
    assert [f.check.split()[0] for f in findings][:3] == ["render", "tokenize", "tito"]


def test_a_template_that_rewrites_assistant_text_breaks_tito() -> None:
    template = load_template("qwen2_5").replace("message.content", "(message.content or '') | trim")
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen2_5"), "qwen2_5")
    broken = ChatFormat(chat.tokenizer, template=template, family_=chat.family)
    assert "tito" in failing(check_template(broken, ParsersConfig(tool_call_parser="qwen25")))


def test_a_parser_that_does_not_read_the_templates_calls_fails(qwen_chat: ChatFormat) -> None:
    findings = check_template(qwen_chat, ParsersConfig(tool_call_parser="llama3", reasoning_parser="qwen3"))
    assert failing(findings) == ["tool-call parser llama3"]


def test_a_template_that_drops_reasoning_fails_the_reasoning_check(qwen_chat: ChatFormat) -> None:
    template = load_template("qwen3").replace("reasoning_content", "dropped_reasoning")
    broken = ChatFormat(qwen_chat.tokenizer, template=template, family_=qwen_chat.family)
    findings = check_template(broken, ParsersConfig(tool_call_parser="qwen25", reasoning_parser="qwen3"))
    assert "reasoning parser qwen3" in failing(findings)
