"""`t3rl check-template` with prompt-given thinking tags (T3RL's `qwen3-thinking` on <thinking>): the
parsers are checked on the turn the model writes (its <thinking> block, then the template's call),
not on the template's own reasoning rendering, which no episode ever contains."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.chat.check import check_template
from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig
from t3rl_core.parsers.sglang_loader import load
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.types import AnswerAction, InvalidAction, ToolCallAction

T3RL = ParsersConfig(
    tool_call_parser="qwen", reasoning_parser="qwen3-thinking", think_tags=("<thinking>", "</thinking>")
)


def test_t3rls_recipe_passes_on_the_turn_the_model_writes(qwen_chat: ChatFormat) -> None:
    findings = {f.check: f for f in check_template(qwen_chat, T3RL)}
    assert all(f.ok for f in findings.values()), findings
    assert "<thinking>" in findings["tool-call parser qwen"].detail
    reasoning = findings["reasoning parser qwen3-thinking"].detail
    assert "a turn without </thinking> is a format error" in reasoning


def test_plain_think_tags_read_an_unclosed_turn_as_it_is(qwen_chat: ChatFormat) -> None:
    parsers = ParsersConfig(tool_call_parser="qwen", think_tags=("<thinking>", "</thinking>"))
    findings = check_template(qwen_chat, parsers)
    assert all(f.ok for f in findings), findings
    assert findings[-1].detail.endswith("a turn without <thinking>…</thinking> is read as it is")


def test_the_shipped_default_model_passes_its_own_check() -> None:
    result = CliRunner().invoke(app, ["check-template", "qwen3_4b_instruct_2507"])
    assert result.exit_code == 0, result.output
    assert "5/5 checks pass" in result.output


CALL = '<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n</tool_call>'


@pytest.mark.parametrize(
    ("text", "sglang", "t3rl"),
    [
        (f"<thinking>go</thinking>\n{CALL}", ("go", f"\n{CALL}"), ToolCallAction),
        (CALL, ("", CALL), InvalidAction),
        (f"<think>go</think>\n{CALL}", ("<think>go</think>\n", CALL), InvalidAction),
        ("<thinking>go</thinking>Done.", ("go", "Done."), AnswerAction),
        ("Done.", ("Done.", ""), InvalidAction),
    ],
)
def test_what_sglang_and_t3rl_make_of_t3rls_combination(text, sglang, t3rl) -> None:
    """The table of docs/explanation/thinking-tags.md: SGLang's detector alone, and t3rl's parse."""
    detector = load().ReasoningParser("qwen3-thinking", stream_reasoning=False)
    detector.detector.think_start_token, detector.detector.think_end_token = T3RL.think_tags
    assert detector.parse_non_stream(text) == sglang
    tools = [{"name": "cd", "parameters": {"type": "object", "properties": {"folder": {"type": "string"}}}}]
    action = ToolCallActionParser(T3RL, tools).parse(text)
    assert isinstance(action, t3rl)
    if t3rl is InvalidAction:
        assert "the reasoning never ends: close it with </thinking>" in action.error
