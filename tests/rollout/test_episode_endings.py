"""How episodes end: limits, engine finishes, env failures, inline continuation, trajectory checks."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.parsers.render import render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.rollout.trajectory import TitoViolation, Trajectory
from t3rl_core.types import ToolCall
from tests.rollout.fakes import TOOLS, FixedEngine, ScriptedEngine, ToyEnv, task

CALL = render_calls("qwen25", [ToolCall("add", {"a": 1, "b": 2})])


def run(
    chat: ChatFormat, env: ToyEnv, engine, limits: RolloutConfig | None = None, **sampling
) -> EpisodeResult:
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25", reasoning_parser="qwen3"), TOOLS)
    return asyncio.run(
        run_episode(
            task(env.questions),
            env=env,
            engine=engine,
            chat=chat,
            parser=parser,
            sampling=SamplingParams(**sampling),
            limits=limits or RolloutConfig(tito_drift_check=True),
        )
    )


def aligned(result: EpisodeResult) -> bool:
    return len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)


def test_step_limit_truncates_and_closes_the_turn(qwen_chat: ChatFormat) -> None:
    env = ToyEnv()
    result = run(qwen_chat, env, ScriptedEngine(qwen_chat, [CALL] * 10), RolloutConfig(max_num_steps=3))
    assert (result.status, result.num_model_calls, len(env.actions)) == ("truncated", 3, 3)
    # the last observation is closed without a generation prompt: no dangling assistant header
    assert qwen_chat.decode(result.tokens).endswith("</tool_response><|im_end|>\n")
    assert result.tokens == qwen_chat.render_ids(result.messages, TOOLS)
    assert env.closed


def test_length_finish_truncates_with_the_template_closing(qwen_chat: ChatFormat) -> None:
    result = run(
        qwen_chat, ToyEnv(), ScriptedEngine(qwen_chat, ["A long answer that goes on"]), max_new_tokens=3
    )
    assert result.status == "truncated"
    assert sum(result.loss_mask) == 3
    assert qwen_chat.decode(result.response_ids[3:]) == "<|im_end|>\n"
    assert result.tokens == qwen_chat.render_ids(result.messages, TOOLS)


def test_context_cap_bounds_each_call_and_truncates(qwen_chat: ChatFormat) -> None:
    engine = ScriptedEngine(qwen_chat, [CALL] * 10)
    prompt = len(qwen_chat.prompt_ids(task()["prompt"], TOOLS))
    cap = prompt + 60
    result = run(qwen_chat, ToyEnv(), engine, RolloutConfig(max_context_len=cap))
    assert result.status == "truncated"
    assert all(
        s.max_new_tokens <= cap - len(seen) for s, seen in zip(engine.samplings, engine.inputs, strict=True)
    )
    assert aligned(result)


def test_response_budget_counts_tokens_after_the_prompt_only(qwen_chat: ChatFormat) -> None:
    """Agent-R1's max_response_length: model output + observations after the prompt, whatever its length."""
    engine = ScriptedEngine(qwen_chat, [CALL] * 10)
    prompt = len(qwen_chat.prompt_ids(task()["prompt"], TOOLS))
    result = run(qwen_chat, ToyEnv(), engine, RolloutConfig(max_response_len=60, max_new_tokens=1000))
    assert result.status == "truncated"
    budgets = [60 - (len(seen) - prompt) for seen in engine.inputs]
    assert [s.max_new_tokens for s in engine.samplings] == budgets
    assert budgets[0] == 60 and all(b > 0 for b in budgets)
    assert aligned(result)


def test_engine_abort_ends_aborted_with_its_error(qwen_chat: ChatFormat) -> None:
    engine = FixedEngine([Generation([], [], "abort", error="server went away")])
    result = run(qwen_chat, ToyEnv(), engine)
    # An abort before any token is no model call, as an engine that raised (wave nine).
    assert (result.status, result.error, result.num_model_calls) == ("aborted", "server went away", 0)
    assert aligned(result)


def test_engine_exception_ends_aborted(qwen_chat: ChatFormat) -> None:
    result = run(qwen_chat, ToyEnv(), FixedEngine([ConnectionResetError("peer reset")]))
    assert result.status == "aborted"
    assert "ConnectionResetError: peer reset" in result.error
    assert result.num_model_calls == 0


@pytest.mark.parametrize("where", ["reset", "step", "outcome"])
def test_env_exceptions_end_failed_and_never_propagate(qwen_chat: ChatFormat, where: str) -> None:
    env = ToyEnv(fail_in=where)
    result = run(qwen_chat, env, ScriptedEngine(qwen_chat, [CALL]))
    assert result.status == "failed"
    assert f"{where} exploded" in result.error
    assert env.closed
    assert aligned(result)


def test_inline_text_continues_the_same_assistant_turn(qwen_chat: ChatFormat) -> None:
    # The model stops at the env's stop string, the env splices its result into the turn, the model
    # goes on in the same assistant message (ReTool's <interpreter> pattern).
    env = ToyEnv(("Add 1 and 2.",), inline_calls=True, stop=("</tool_call>",))
    engine = ScriptedEngine(qwen_chat, [CALL, "So the sum is 3."])
    result = run(qwen_chat, env, engine)
    assert result.status == "completed"
    assistant = [m for m in result.messages if m["role"] == "assistant"]
    assert len(assistant) == 1
    assert assistant[0]["content"] == CALL + "\n<result>3</result>\nSo the sum is 3."
    inline_ids = qwen_chat.encode("\n<result>3</result>\n")
    first_call = engine.inputs[1][len(result.prompt_ids) :]
    assert first_call == qwen_chat.encode(CALL) + inline_ids
    assert result.loss_mask[: len(first_call)] == [1] * (len(first_call) - len(inline_ids)) + [0] * len(
        inline_ids
    )
    assert result.response_text == CALL + "So the sum is 3."
    assert result.tokens == qwen_chat.render_ids(result.messages, TOOLS)


def test_env_stop_strings_reach_the_engine(qwen_chat: ChatFormat) -> None:
    engine = ScriptedEngine(qwen_chat, ["The sum is 3."])
    run(qwen_chat, ToyEnv(("q",), stop=("</code>",)), engine, stop=("###",))
    assert engine.samplings[0].stop == ("###", "</code>")
    assert set(qwen_chat.stop_token_ids) <= set(engine.samplings[0].stop_token_ids)


def test_timings_split_generation_from_orchestration(qwen_chat: ChatFormat) -> None:
    class SlowEngine(ScriptedEngine):
        async def generate(self, *args, **kwargs):
            await asyncio.sleep(0.05)
            return await super().generate(*args, **kwargs)

    result = run(qwen_chat, ToyEnv(("q",)), SlowEngine(qwen_chat, ["done"]))
    assert result.timings["generation_s"] >= 0.05
    assert result.timings["orchestration_s"] < result.timings["generation_s"]
    assert result.timings["total_s"] == pytest.approx(
        result.timings["generation_s"] + result.timings["orchestration_s"]
    )


def test_trajectory_rejects_misaligned_appends() -> None:
    trajectory = Trajectory([1, 2])
    trajectory.append_model([3, 4], [-0.1, -0.2])
    trajectory.append_observation([5])
    assert (trajectory.tokens, trajectory.loss_mask, trajectory.log_probs) == (
        [1, 2, 3, 4, 5],
        [1, 1, 0],
        [-0.1, -0.2, 0.0],
    )
    with pytest.raises(TitoViolation, match="TITO violation: 1 model tokens but 2 log-probs"):
        trajectory.append_model([6], [-0.1, -0.2])
    trajectory.loss_mask.append(1)
    with pytest.raises(TitoViolation, match="TITO violation"):
        trajectory.check()


def test_episode_result_enforces_alignment() -> None:
    with pytest.raises(TitoViolation):
        EpisodeResult([1], [2, 3], [1], [0.0, 0.0], [], "", "completed", {}, 1)


def test_trajectory_owns_a_copy_of_its_prompt() -> None:
    prompt = [1, 2]
    trajectory = Trajectory(prompt)
    prompt.append(9)
    trajectory.prompt_ids.append(8)  # a copy
    trajectory.append_model([3], [-0.5])
    assert trajectory.tokens == [1, 2, 3] and trajectory.prompt_ids == [1, 2] and len(trajectory) == 3
    trajectory.rewind(0)
    assert trajectory.tokens == [1, 2] and trajectory.response_ids == []
