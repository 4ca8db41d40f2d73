"""Runtime hunt, wave six: the world side of the stop contract, engine answers of odd shapes, and what
else wave five left (docs/explanation/tito.md, "Hunted, wave six")."""

from __future__ import annotations

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RolloutConfig
from t3rl_core.parsers.render import call_format, render_calls
from t3rl_core.types import ToolCall
from tests.rollout.fakes import ScriptedEngine, ToyEnv, play


def _call(chat: ChatFormat) -> str:
    assert chat.family is not None
    return render_calls(chat.family.tool_call_parser, [ToolCall("add", {"a": 1, "b": 2})])


# ------------------------------------------------------------ inline text after a turn the model ended


def test_inline_text_after_the_turn_ending_token_is_the_worlds_failure(chat: ChatFormat) -> None:
    """Every family: a world answering a call with inline text when the model ended that call with its
    turn-ending token (no stop string of the world's cut it first). Before: the trained context held
    `...<|im_end|>` then the world's text inside one assistant message, a context no render writes
    (only the drift check saw it). Now the world's failure, naming its `stop` and the fix."""
    env = ToyEnv(("Add 1 and 2.",), inline_calls=True)
    result = play(chat, env, ScriptedEngine(chat, [_call(chat), "The sum is 3."]), RolloutConfig())

    assert result.status == "failed" and result.failure is not None
    assert result.failure.label == "env/InlineAfterTurnEnd"
    assert "ToyEnv.stop is ()" in result.error and "declare the text that ends a call in ToyEnv.stop" in (
        result.error or ""
    )
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)


def test_inline_text_after_a_stop_string_continues_the_turn(chat: ChatFormat) -> None:
    """The opposite: the same world declaring the call format's closing marker as its stop string plays
    on in the same assistant message, a fresh render's tokens (every family with such a marker)."""
    assert chat.family is not None
    closing = call_format(chat.family.tool_call_parser)
    close = closing.block_close or closing.call_close
    if close is None:
        pytest.skip("Llama-3's calls end at no marker: no world can continue them inline")
    env = ToyEnv(("Add 1 and 2.",), inline_calls=True, stop=(close,))
    engine = ScriptedEngine(chat, [_call(chat), "The sum is 3."])
    result = play(chat, env, engine, RolloutConfig(tito_drift_check=True))

    assert result.status == "completed", result.error
    assert result.drift_at is None
    assert [m["role"] for m in result.messages[2:]] == ["assistant"]
