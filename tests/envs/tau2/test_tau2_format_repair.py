"""The format-repair protocol of Tau2-RL-Pipeline on real tau2 episodes (retail task 0, scripted user)
with a scripted engine: the retry's temperature, the history kept in train and eval, parse_error, the
token accounting of a repaired turn, and the option off."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.envs.format_repair import REFERENCE_MESSAGE
from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.rollout.episode import EpisodeResult
from t3rl_core.rollout.runner import EpisodeRunner
from tests.rollout.fakes import ScriptedEngine

GREETING = {"name": "respond", "arguments": {"content": "Hello! How can I help you today?"}}
GOOD = f"<tool_call>\n{json.dumps(GREETING)}\n</tool_call>"
PLAIN = "Sure, let me look into that for you."
SAMPLING = SamplingParams(temperature=0.7, max_new_tokens=512)


@pytest.fixture(scope="module")
def chat() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


def play(
    chat: ChatFormat,
    row: dict[str, Any],
    texts: list[str],
    mode: str = "train",
    max_num_steps: int = 2,
    engine_class: type[ScriptedEngine] = ScriptedEngine,
    **env,
) -> tuple[EpisodeResult, ScriptedEngine]:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "tau2", **env},
            "reward": {"name": "tau2_shaped"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "hermes"},
            "rollout": {"max_num_steps": max_num_steps, "tito_drift_check": True},
        }
    )
    engine = engine_class(chat, texts, calls_tools=lambda text: "<tool_call>" in text)
    runner = EpisodeRunner.from_runtime(runtime, engine, chat=chat)

    async def run() -> EpisodeResult:
        try:
            return (await runner.run(row, mode, SAMPLING))[0]
        finally:
            await runner.aclose()

    return asyncio.run(run()), engine


def aligned(result: EpisodeResult) -> bool:
    return len(result.log_probs) == len(result.loss_mask) == result.response_length


def trained_text(chat: ChatFormat, result: EpisodeResult) -> str:
    return chat.decode([t for t, m in zip(result.response_ids, result.loss_mask, strict=True) if m])


@pytest.fixture
def retail0(base_rows):
    return base_rows["retail"]["0"]


def test_train_retries_greedily_and_keeps_only_the_repaired_turn(chat, retail0):
    result, engine = play(chat, retail0, [PLAIN, GOOD])
    assert [s.temperature for s in engine.samplings] == [0.7, 0.0]
    # the retry read the failed turn and the reference's correction
    assert chat.decode(engine.inputs[1]).endswith(
        f"{PLAIN}<|im_end|>\n<|im_start|>user\n{REFERENCE_MESSAGE}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert result.status == "truncated" and result.format_repairs == 1 and result.num_model_calls == 2
    assistant = [m["content"] for m in result.messages if m["role"] == "assistant"]
    assert assistant == [GOOD]
    assert not any(REFERENCE_MESSAGE in str(m["content"]) for m in result.messages)
    # TITO: the failed tokens left the trajectory; the repaired ones are trained, with their log-probs
    assert aligned(result) and result.drift_at is None
    assert PLAIN not in chat.decode(result.response_ids)
    assert trained_text(chat, result).startswith(GOOD)
    assert {lp for lp, m in zip(result.log_probs, result.loss_mask, strict=True) if m} == {-0.5}
    assert result.outcome["format_errors"] == 1 and result.outcome["user_turns"] == 2


@pytest.mark.parametrize(
    ("mode", "env"), [("eval", {}), ("train", {"format_repair": {"keep_in_history": {"train": True}}})]
)
def test_kept_history_shows_the_format_error_turn_and_does_not_train_the_failed_one(chat, retail0, mode, env):
    result, engine = play(chat, retail0, [PLAIN, GOOD], mode=mode, **env)
    assert [s.temperature for s in engine.samplings] == [0.7, 0.0]
    roles = [(m["role"], m["content"]) for m in result.messages[2:5]]
    assert roles == [("assistant", PLAIN), ("user", REFERENCE_MESSAGE), ("assistant", GOOD)]
    assert aligned(result) and result.drift_at is None
    assert PLAIN in chat.decode(result.response_ids)  # in the context…
    assert PLAIN not in trained_text(chat, result)  # …with loss mask 0
    assert trained_text(chat, result).startswith(GOOD)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_still_malformed_ends_as_parse_error_with_nothing_trained(chat, retail0, mode):
    result, engine = play(chat, retail0, [PLAIN, "Still no call."], mode=mode, max_num_steps=5)
    assert result.status == "parse_error" and "Plain text reaches nobody" in result.error
    assert len(engine.samplings) == 2 and engine.samplings[1].temperature == 0.0
    assert aligned(result) and sum(result.loss_mask) == 0
    assert result.outcome["task_reward"] == 0.0 and result.outcome["terminated"] is False


def test_text_around_the_call_is_a_format_error(chat, retail0):
    result, _ = play(chat, retail0, [f"Let me greet them.\n{GOOD}", GOOD])
    assert result.format_repairs == 1 and "Let me greet them" not in chat.decode(result.response_ids)
    assert [m["content"] for m in result.messages if m["role"] == "assistant"] == [GOOD]


def test_several_calls_and_unclosed_tags_are_repaired(chat, retail0):
    two = GOOD + "\n" + GOOD
    result, _ = play(
        chat, retail0, [two, "<tool_call>\n{", GOOD], max_num_steps=3, format_repair={"attempts": 2}
    )
    assert result.format_repairs == 1 and result.outcome["format_errors"] == 2
    assert [m["content"] for m in result.messages if m["role"] == "assistant"] == [GOOD]
    assert aligned(result) and result.drift_at is None


def test_repaired_turn_as_context_only(chat, retail0):
    result, _ = play(chat, retail0, [PLAIN, GOOD], format_repair={"train_on_repaired": False})
    assert aligned(result) and sum(result.loss_mask) == 0 and GOOD in chat.decode(result.response_ids)


class AbortingRetry(ScriptedEngine):
    """Plays the script, but the engine aborts the first call at temperature 0 (the repair)."""

    async def generate(self, input_ids, sampling, context=None):
        if sampling.temperature == 0.0 and not any(s.temperature == 0.0 for s in self.samplings):
            self.samplings.append(sampling)
            return Generation([], [], "abort", error="server went away")
        return await super().generate(input_ids, sampling, context)


def test_an_engine_abort_during_the_repair_is_an_abort_with_nothing_trained(chat, retail0):
    result, _ = play(chat, retail0, [PLAIN, GOOD], max_num_steps=5, engine_class=AbortingRetry)
    assert (result.status, result.error) == ("aborted", "server went away")
    assert aligned(result) and sum(result.loss_mask) == 0


def test_a_retry_cut_off_at_the_token_limit_is_a_parse_error(chat, retail0):
    long_reply = json.dumps({"name": "respond", "arguments": {"content": "word " * 600}})
    result, _ = play(chat, retail0, [PLAIN, f"<tool_call>\n{long_reply}\n</tool_call>"], max_num_steps=5)
    assert result.status == "parse_error" and "cut off at the token limit" in result.error
    assert aligned(result) and sum(result.loss_mask) == 0


def test_limit_reached_before_the_repair_is_a_parse_error(chat, retail0):
    result, engine = play(chat, retail0, [PLAIN, GOOD], max_num_steps=1)
    assert result.status == "parse_error" and len(engine.samplings) == 1
    assert aligned(result) and sum(result.loss_mask) == 0


def test_without_repair_the_format_error_is_an_observation_as_before(chat, retail0):
    result, engine = play(chat, retail0, [PLAIN, GOOD], format_repair=None)
    assert [s.temperature for s in engine.samplings] == [0.7, 0.7]
    assert result.status == "truncated" and result.format_repairs == 0
    feedback = result.messages[3]
    assert feedback["role"] == "user" and feedback["content"].startswith(
        "FORMAT ERROR: Plain text reaches nobody."
    )
    # the malformed turn is trained on, as every sampled turn was before
    assert trained_text(chat, result).startswith(PLAIN)
    # text around a call is accepted without the repair protocol
    result, _ = play(chat, retail0, [f"Hi.\n{GOOD}"], max_num_steps=1, format_repair=None)
    assert result.outcome["format_errors"] == 0 and result.outcome["user_turns"] == 2


def test_config_defaults_are_the_reference_and_unknown_keys_are_rejected():
    repair = Tau2EnvConfig().format_repair
    assert repair is not None
    assert (repair.attempts, repair.temperature, repair.message) == (1, 0.0, REFERENCE_MESSAGE)
    assert (repair.keep_in_history.train, repair.keep_in_history.eval) == (False, True)
    for bad in ({"attempts": 0}, {"temperature": -1}, {"tries": 1}, {"keep_in_history": {"test": True}}):
        with pytest.raises(ValidationError):
            Tau2EnvConfig.model_validate({"format_repair": bad})
