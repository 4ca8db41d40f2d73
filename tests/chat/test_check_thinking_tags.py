"""`t3rl check-template` with prompt-given thinking tags (T3RL's `qwen3-thinking` on <thinking>): the
parsers are checked on the turn the model writes (its <thinking> block, then the template's call),
not on the template's own reasoning rendering, which no episode ever contains."""

from __future__ import annotations

from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.chat.check import check_template
from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig

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
