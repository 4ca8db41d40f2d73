"""For every shipped chat family: a multi-turn episode's tokens equal a fresh render of its conversation."""

from __future__ import annotations

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.parsers.render import render_calls
from t3rl_core.rollout.episode import EpisodeResult
from t3rl_core.types import AnswerAction, InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS, ScriptedEngine, ToyEnv, play


def _script(chat: ChatFormat) -> list[str]:
    family = chat.family
    assert family is not None
    think = "<think>I should add the numbers.</think>\n" if family.reasoning_parser else ""
    broken = render_calls(family.tool_call_parser, [ToolCall("add", {"a": 3, "b": 4})])
    broken = broken[: broken.rfind("}")] + broken[broken.rfind("}") + 1 :]
    if "}" not in broken or broken == render_calls(
        family.tool_call_parser, [ToolCall("add", {"a": 3, "b": 4})]
    ):
        broken = broken.replace("</tool_call>", "")
    return [
        think + render_calls(family.tool_call_parser, [ToolCall("add", {"a": 1, "b": 2})]),
        "The sum is 3.",
        broken,
        render_calls(
            family.tool_call_parser, [ToolCall("add", {"a": 3, "b": 4}), ToolCall("echo", {"text": "ok"})]
        ),
        think + "The sum is 7.",
    ]


def _run(chat: ChatFormat, env: ToyEnv, engine: ScriptedEngine) -> EpisodeResult:
    return play(chat, env, engine, RolloutConfig(tito_drift_check=True), SamplingParams(max_new_tokens=512))


def test_episode_tokens_equal_a_fresh_render(chat: ChatFormat) -> None:
    script = _script(chat)
    env, engine = ToyEnv(), ScriptedEngine(chat, script)
    result = _run(chat, env, engine)

    assert result.status == "completed", result.error
    assert [type(action) for action in env.actions] == [
        ToolCallAction,
        AnswerAction,
        InvalidAction,
        ToolCallAction,
        AnswerAction,
    ]
    assert len(env.actions[3].calls) == 2
    assert result.num_model_calls == 5

    expected = chat.render_ids(result.messages, TOOLS)
    if chat.family.name in ("glm4", "glm4_0414"):
        # GLM has no turn-closing token: the model ends a turn by writing the next role token. Where
        # the env's next message has another role (feedback after a failed call, the end of the
        # episode), the model's own role token stays in the trajectory and a render lacks it.
        kept = _without_unrendered_role_tokens(result, chat)
        assert kept == expected
        assert len(result.tokens) - len(kept) == 2  # after the malformed call, and at the very end
    else:
        assert result.tokens == expected
        assert result.drift_at is None


def _without_unrendered_role_tokens(result: EpisodeResult, chat: ChatFormat) -> list[int]:
    tokens = result.prompt_ids + result.response_ids
    mask = [0] * len(result.prompt_ids) + result.loss_mask
    stops = set(chat.stop_token_ids)
    return [
        token
        for i, token in enumerate(tokens)
        if not (
            mask[i] == 1
            and token in stops
            and (i + 1 == len(tokens) or (mask[i + 1] == 0 and tokens[i + 1] in stops))
        )
    ]


def test_model_tokens_are_masked_in_and_everything_else_out(chat: ChatFormat) -> None:
    engine = ScriptedEngine(chat, _script(chat))
    outputs: list[list[int]] = []
    original = engine.generate

    async def record(*args, **kwargs):
        generation = await original(*args, **kwargs)
        outputs.append(generation.token_ids)
        return generation

    engine.generate = record  # type: ignore[method-assign]
    result = _run(chat, ToyEnv(), engine)

    assert (
        len(result.response_ids) == len(result.loss_mask) == len(result.log_probs) == result.response_length
    )
    model_tokens = [t for t, m in zip(result.response_ids, result.loss_mask, strict=True) if m == 1]
    assert model_tokens == [token for output in outputs for token in output]
    assert all(lp == -0.5 for lp, m in zip(result.log_probs, result.loss_mask, strict=True) if m == 1)
    assert all(lp == 0.0 for lp, m in zip(result.log_probs, result.loss_mask, strict=True) if m == 0)
    # Each call read exactly the tokens accumulated so far: ids in, never text re-tokenized.
    for seen in engine.inputs:
        assert result.tokens[: len(seen)] == seen


def test_assistant_content_is_kept_verbatim(chat: ChatFormat) -> None:
    script = _script(chat)
    result = _run(chat, ToyEnv(), ScriptedEngine(chat, script))
    assistant = [m["content"] for m in result.messages if m["role"] == "assistant"]
    family = chat.family
    calls = family.call_turn_prefix if family.call_turn_prefix is not None else family.turn_prefix
    # The scripted engine's turns that mention the toy tools are tool-calling turns.
    assert assistant == [(calls if "add" in text else family.turn_prefix) + text for text in script]
    assert result.response_text == "".join(assistant)
    if chat.family.reasoning_parser:
        assert "<think>I should add the numbers.</think>" in assistant[0]
