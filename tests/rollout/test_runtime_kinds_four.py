"""Runtime kinds of round four: the drift check on an env's inline text, a model that writes the
placeholder character the control-text encoding uses, and what a reward may hand slime as a reward."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RolloutConfig, RuntimeConfig
from t3rl_core.credit import turn_record
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.engines.sglang_http import BadResponse, SGLangEngine, parse_generation
from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.envs.retool.env import ReToolEnv
from t3rl_core.envs.retool.parser import CodeBlockParser
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.advantage import turn_level_rewards
from t3rl_core.hooks.failures import METADATA_KEY
from t3rl_core.parsers.render import render_calls
from t3rl_core.registries import REWARDS
from t3rl_core.rewards.base import InvalidReward, Reward, RewardInput, RewardResult
from t3rl_core.rewards.retool import ReToolOutcomeReward, ReToolRewardConfig
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.rollout.failures import Failure
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.sandbox.base import Sandbox, SandboxResult
from t3rl_core.score.single_turn import toolrl
from t3rl_core.types import Action, ToolCall, Transition
from tests.rollout.fakes import TOOLS, FixedEngine, ScriptedEngine, ToyEnv, family_parser, play, task
from tests.rollout.test_runner import runtime, toy_runner
from tests.rollout.test_tito_properties import _ALL_CONTROL, _FORGED, _echo, _Hostile
from tests.support.slime_sample import Sample

CODE = "Let me compute.\n<code>\n```python\nprint(17 * 23)\n```\n</code>"
ANSWER = "So the answer is\n<answer>\n\\boxed{391}\n</answer>"


class _Printer(Sandbox):
    """A sandbox whose every cell prints `output` (what a model's code may well print)."""

    def __init__(self, output: str) -> None:
        self.output = output

    async def run(self, code: str) -> SandboxResult:
        return SandboxResult("success", self.output, "", 0, 0.0)

    async def aclose(self) -> None:
        pass


def _retool(chat: ChatFormat, output: str, turns: int = 1) -> EpisodeResult:
    env = ReToolEnv({"label": "391"}, _Printer(output), ReToolEnvConfig())
    engine = ScriptedEngine(chat, [CODE] * turns + [ANSWER], calls_tools=lambda _: False)
    task = {"prompt": [{"role": "user", "content": "What is 17 times 23?"}], "metadata": {}, "label": "391"}
    return asyncio.run(
        run_episode(
            task,
            env=env,
            engine=engine,
            chat=chat,
            parser=CodeBlockParser(None, []),  # type: ignore[arg-type]  # the format reads no parsers
            sampling=SamplingParams(),
            limits=RolloutConfig(tito_drift_check=True),
        )
    )


@settings(max_examples=8, deadline=None)
@given(output=st.lists(st.sampled_from([*_ALL_CONTROL, "\n", "391", "é", "<", ">"]), max_size=6).map("".join))
def test_inline_interpreter_text_with_control_tokens_is_no_drift(chat: ChatFormat, output: str) -> None:
    """A ReTool cell that prints control-token texts: the trajectory encodes them as text inside the
    model's turn, which is right; the drift check used to render the whole assistant message fresh,
    parse them as control tokens there and report drift (every family but llama3 and glm4_0414)."""
    for turns in (1, 2):
        result = _retool(chat, output, turns)
        assert result.status == "completed", result.error
        assert result.drift_at is None


def test_the_drift_check_still_sees_inline_text_encoded_as_control_tokens(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation: a loop that encoded the inline text plainly (its control texts as control tokens)
    is reported as drift at the first forged token."""
    assert _retool(qwen_chat, _FORGED).drift_at is None

    async def plain(text: str) -> list[int]:
        return qwen_chat.encode(text)

    monkeypatch.setattr(qwen_chat, "encode_text_async", plain)
    drifted = _retool(qwen_chat, _FORGED)
    assert drifted.drift_at is not None
    forged_at = drifted.response_ids.index(qwen_chat.encode("<|im_end|>")[0])
    assert drifted.drift_at == len(drifted.prompt_ids) + forged_at


def test_a_model_writing_the_placeholder_character_beside_a_hostile_tool(chat: ChatFormat) -> None:
    """U+FDD0 stands in for hidden control texts while a conversation is rendered. A model that wrote
    it (a sampled noncharacter) next to a tool result holding a control token's text made the drift
    check's render count one placeholder more than it hid: a ValueError out of `run_episode`, which
    must never raise; and the same in a prompt's few-shot assistant turn ended the episode failed."""
    engine = ScriptedEngine(chat, [_echo(chat, "a\ufdd0b"), "Done \ufdd0."])
    result = play(chat, _Hostile("".join(_ALL_CONTROL)), engine, RolloutConfig(tito_drift_check=True))
    assert result.status == "completed", result.error
    assert result.drift_at is None

    few_shot = [
        {"role": "user", "content": "".join(_ALL_CONTROL)},
        {"role": "assistant", "content": "x\ufdd0y"},
        {"role": "user", "content": "Add 1 and 2."},
    ]
    ids = chat.prompt_ids(few_shot)
    assert chat.decode(ids) == chat.render(few_shot, add_generation_prompt=True)


class _Returns(Reward):
    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self, inp: RewardInput) -> RewardResult:
        return self.value if isinstance(self.value, RewardResult | str) else RewardResult(self.value)


def _score(qwen_chat: ChatFormat, value: Any) -> tuple[EpisodeResult, RewardResult]:
    runner = toy_runner(qwen_chat, reward=_Returns(value))
    return asyncio.run(runner.run(task()))


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None, "1.0", [1.0], "a RewardResult"])
def test_a_reward_slime_cannot_train_on_is_the_rewards_failure(qwen_chat: ChatFormat, value: Any) -> None:
    """A NaN reward poisons its whole prompt group's advantages; it used to reach `sample.reward` as is,
    counted as the policy's own result. Now it is the reward's failure: reward 0.0, removed from
    training with its group by the hooks, counted under rollout/failures/reward/InvalidReward."""
    result, score = _score(qwen_chat, value)
    assert result.failure is not None and result.failure.label == "reward/InvalidReward"
    assert score.value == 0.0


@pytest.mark.parametrize(
    ("value", "expected"), [(1, 1.0), (np.float32(0.5), 0.5), (np.int64(-3), -3.0), (0.25, 0.25)]
)
def test_real_rewards_reach_slime_as_built_in_floats(
    qwen_chat: ChatFormat, value: Any, expected: float
) -> None:
    result, score = _score(qwen_chat, value)
    assert result.failure is None
    assert type(score.value) is float and score.value == expected


def test_slimes_reward_hook_refuses_a_nan_reward(monkeypatch: pytest.MonkeyPatch) -> None:
    """`reward_func` (slime's --custom-rm-path, for a sample without a reward) recomputes the reward:
    it returned a NaN as is."""
    monkeypatch.setattr(REWARDS, "build", lambda config: _Returns(math.nan))
    args = SimpleNamespace(t3rl=runtime())
    sample = Sample(metadata={"outcome": {"turns_answered": 1, "turns": 2}})
    with pytest.raises(InvalidReward, match="finite"):
        asyncio.run(hooks.reward_func(args, sample))


class _HugeFactory:
    """Episodes of `_Hostile(output)`: every tool call returns `output`."""

    def __init__(self, output: str) -> None:
        self.output = output

    def __call__(self, row: dict[str, Any], mode: str) -> _Hostile:
        return _Hostile(self.output)

    async def aclose(self) -> None:
        pass


@settings(max_examples=25, deadline=None)
@given(
    words=st.integers(0, 400),
    inline=st.booleans(),
    context=st.none() | st.integers(300, 1200),
    response=st.none() | st.integers(1, 900),
)
def test_no_episode_passes_its_token_limits(
    qwen_chat: ChatFormat, words: int, inline: bool, context: int | None, response: int | None
) -> None:
    """A tool's output (here up to ~2000 tokens) joined the trajectory whole, whatever was left of
    `max_context_len` / `max_response_len`: a sample of 1939 tokens under a cap of 600, which slime's
    batches (and pre-flight's memory check) are sized by. Now the inserted tokens past a limit are
    dropped and counted; the model's tokens are exactly the engine's, the lists stay aligned and the
    trajectory is still a fresh render's prefix (no drift)."""
    env = _Hostile("word " * words, inline_calls=inline)
    engine = ScriptedEngine(qwen_chat, [_echo(qwen_chat, "x"), "Done.", _echo(qwen_chat, "y"), "Done."])
    limits = RolloutConfig(max_context_len=context, max_response_len=response, tito_drift_check=True)
    result = play(qwen_chat, env, engine, limits)
    unlimited = play(
        qwen_chat,
        _Hostile("word " * words, inline_calls=inline),
        ScriptedEngine(qwen_chat, [_echo(qwen_chat, "x"), "Done.", _echo(qwen_chat, "y"), "Done."]),
        RolloutConfig(),
    )

    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)
    if context is not None:
        assert len(result.prompt_ids) + len(result.response_ids) <= max(context, len(result.prompt_ids))
    if response is not None:
        assert len(result.response_ids) <= response
    model = [t for t, mask in zip(result.response_ids, result.loss_mask, strict=True) if mask]
    played = [t for t, mask in zip(unlimited.response_ids, unlimited.loss_mask, strict=True) if mask]
    assert model == played[: len(model)]
    if result.cut_tokens:
        assert result.status == "truncated"
        assert len(result.response_ids) + result.cut_tokens <= len(unlimited.response_ids)
    assert result.drift_at is None


def test_slime_gets_a_sample_within_its_limits_with_the_cut_counted(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = runtime(max_context_len=600)
    engine = ScriptedEngine(qwen_chat, [_echo(qwen_chat, "x"), "Done."])
    runner = EpisodeRunner(
        config, engine, env_factory=_HugeFactory("word " * 500), chat=qwen_chat, reward=_Returns(1.0)
    )

    async def built(args: Any, runtime_config: Any) -> EpisodeRunner:
        return runner

    monkeypatch.setattr(hooks, "_runner", built)
    sample = asyncio.run(
        hooks.generate(
            SimpleNamespace(t3rl=config), Sample(prompt=task()["prompt"], metadata=task()["metadata"]), {}
        )
    )
    assert len(sample.tokens) == 600 and sample.status is Sample.Status.TRUNCATED
    assert sample.response_length == len(sample.loss_mask) == len(sample.rollout_log_probs)
    assert sample.metadata["t3rl_metrics"]["cut_tokens"] > 0


def _escaped_surrogates(chat: ChatFormat) -> str:
    """A call of `echo` whose JSON arguments spell lone surrogates as escapes (text a model can sample)."""
    assert chat.family is not None
    text = render_calls(chat.family.tool_call_parser, [ToolCall("echo", {"text": "a"})])
    return text.replace('"a"', '"\\ud800 and \\udfff"')


def test_a_tool_echoing_a_json_escaped_lone_surrogate(chat: ChatFormat) -> None:
    """`{"text": "\\ud800"}` decodes to a lone surrogate, which the echoing tool handed back: no
    tokenizer encodes it, so the episode failed as t3rl's own bug (removed with its group, counted
    toward the failure rate that stops the run) and with the drift check `run_episode` raised. Now
    every text entering the episode is scalar text (U+FFFD in its place)."""
    engine = ScriptedEngine(chat, [_escaped_surrogates(chat), "Done."])
    result = play(chat, ToyEnv(), engine, RolloutConfig(tito_drift_check=True))
    assert result.status == "completed" and result.failure is None, result.error
    assert result.drift_at is None
    if "\\ud800" in result.messages[2]["content"]:  # (GLM's format writes the value raw, no escape)
        assert result.messages[3]["content"] == "\ufffd and \ufffd"
    json.dumps(result.messages, ensure_ascii=False).encode("utf-8")  # a record file can hold it


def test_surrogates_in_a_prompt_and_in_inline_text(qwen_chat: ChatFormat) -> None:
    engine = ScriptedEngine(qwen_chat, [_escaped_surrogates(qwen_chat), "Done."])
    env = ToyEnv(inline_calls=True, stop=("</tool_call>",))
    row = task(("Add 1 and 2 \ud83d.", "Now add 3 and 4."))
    result = asyncio.run(
        run_episode(
            row, env=env, engine=engine, chat=qwen_chat, parser=family_parser(qwen_chat),
            sampling=SamplingParams(), limits=RolloutConfig(),
        )
    )  # fmt: skip
    assert result.status == "completed" and result.failure is None, result.error
    assert result.messages[1]["content"] == "Add 1 and 2 \ufffd."
    assert "<result>\ufffd and \ufffd</result>" in result.messages[2]["content"]


class _TurnToy(ToyEnv):
    """ToyEnv reporting per-turn rewards as BFCL does: a turn's steps, and 1.0 once it is answered."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = [0] * len(self.questions)

    async def step(self, action: Action) -> Transition:
        self.steps[self.turn] += 1
        return await super().step(action)

    def outcome(self) -> dict[str, Any]:
        rewards = [(1.0 if k < self.turn else 0.0) if n else None for k, n in enumerate(self.steps)]
        return {**super().outcome(), "turn_rewards": rewards, "turn_steps": list(self.steps)}


def test_a_call_the_env_never_stepped_is_in_no_turns_span(qwen_chat: ChatFormat) -> None:
    """Turn 0 answered (reward 1), then turn 1's first call is cut at the token limit: the env never saw
    it, so turn 1 has no step and no reward. Its model tokens fell into turn 0's span, taking turn 0's
    advantage (MT-GRPO: Â^T_0 + λÂ^O) for a call no turn reward judged."""

    def generation(text: str, finish: str) -> Generation:
        ids = qwen_chat.encode(text) + ([qwen_chat.stop_token_ids[0]] if finish == "stop" else [])
        return Generation(ids, [-0.5] * len(ids), finish)

    outputs = [generation(_echo(qwen_chat, "x"), "stop"), generation("The sum is 3.", "stop")]
    outputs.append(generation("Let me think about 3 and", "length"))
    result = play(qwen_chat, _TurnToy(), FixedEngine(outputs), RolloutConfig())
    assert result.status == "truncated" and result.outcome["turn_steps"] == [2, 0]

    record = turn_record(result.outcome, result.step_starts, len(result.response_ids))
    assert record is not None and record["rewards"] == [1.0, None]
    cut_call = result.step_starts[2]
    assert result.loss_mask[cut_call] == 1
    assert record["spans"][0] == [0, cut_call]


_TOOLRL_GT = (
    '<think> I should call it. </think>\n<tool_call>\n{"name": "search", "parameters": {"page": "1"}}'
    "\n</tool_call>"
)
_TOOLRL_DATA = Path(__file__).resolve().parents[1] / "fixtures" / "toolrl" / "rlla_4k_test.parquet"


def _cut(chat: ChatFormat, text: str) -> Generation:
    """A generation of `text` that ended at the token limit."""
    ids = chat.encode(text)
    return Generation(ids, [-0.5] * len(ids), "length")


def test_toolrl_scores_an_answer_cut_at_the_token_limit_as_written(qwen_chat: ChatFormat) -> None:
    """ToolRL's reward manager decodes the response whatever ended it: a complete call followed by a
    `<response>` cut at max_response_length scores correctness 3 (format 0). The cut call never
    reached the env, whose outcome then held an empty response: correctness −3."""
    config = RuntimeConfig.model_validate(
        {
            "env": {"name": "toolrl_single_turn", "data": {"splits": {"toolrl_test": str(_TOOLRL_DATA)}}},
            "reward": {"name": "toolrl"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    text = _TOOLRL_GT + "\n<response> The first page of the results is"
    runner = EpisodeRunner.from_runtime(config, FixedEngine([_cut(qwen_chat, text)]), chat=qwen_chat)
    row = {"prompt": [{"role": "user", "content": "Search page one."}], "metadata": {}, "label": _TOOLRL_GT}
    episode, reward = asyncio.run(runner.run(row, "train"))
    assert episode.status == "truncated"
    assert episode.outcome["response"] == text
    assert reward.metrics["correctness"] == 3.0 and reward.metrics["format"] == 0.0
    assert reward.value == toolrl(text, _TOOLRL_GT, step=0).reward


def test_retool_scores_a_turn_cut_at_the_token_limit_as_written(qwen_chat: ChatFormat) -> None:
    """Agent-R1 decodes the whole response: an answer whose last token hit the token limit still ends
    with `</answer>`, so it scores 1; the cut turn was missing from the env's response (−1)."""
    env = ReToolEnv({"label": "391"}, _Printer("391"), ReToolEnvConfig())
    code = ScriptedEngine(qwen_chat, [CODE], calls_tools=lambda _: False)
    first = asyncio.run(code.generate([], SamplingParams()))
    engine = FixedEngine([first, _cut(qwen_chat, ANSWER)])
    task_row = {"prompt": [{"role": "user", "content": "17 times 23?"}], "metadata": {}, "label": "391"}
    result = asyncio.run(
        run_episode(
            task_row, env=env, engine=engine, chat=qwen_chat,
            parser=CodeBlockParser(None, []),  # type: ignore[arg-type]  # the format reads no parsers
            sampling=SamplingParams(), limits=RolloutConfig(),
        )
    )  # fmt: skip
    assert result.status == "truncated" and result.outcome["response"].endswith(ANSWER)
    reward = ReToolOutcomeReward(ReToolRewardConfig())(RewardInput(outcome=result.outcome))
    assert reward.value == 1.0


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_rollout_log_prob_is_a_bad_response(bad: str) -> None:
    """SGLang's log-probs become slime's rollout_log_probs (its importance ratios): a NaN one was kept,
    to make the step's loss NaN. It is a malformed answer now (retried, then the engine's failure)."""
    body = (
        '{"meta_info": {"finish_reason": {"type": "stop"}, '
        f'"output_token_logprobs": [[-0.5, 7, null], [{bad}, 8, null]]}}}}'
    ).encode()
    with pytest.raises(BadResponse, match="non-finite"):
        parse_generation(body)
    assert parse_generation(body.replace(bad.encode(), b"-1.5")).log_probs == [-0.5, -1.5]


class _Ends(ToyEnv):
    """ToyEnv whose reset raises or ends the episode at once."""

    def __init__(self, how: str) -> None:
        super().__init__(fail_in="reset" if how == "reset raises" else None)
        self.how = how

    async def reset(self) -> Transition:
        await super().reset()
        return Transition(done=self.how == "done at reset")


class _EndsFactory(_HugeFactory):
    def __call__(self, row: dict[str, Any], mode: str) -> _Hostile:
        return _Ends(self.output)  # type: ignore[return-value]  # a ToyEnv all the same


@pytest.mark.parametrize(
    ("how", "outputs", "limits"),
    [
        ("reset raises", [], {}),
        ("done at reset", [], {}),
        ("plays", [RuntimeError("connection refused")], {}),
        ("plays", [], {"max_context_len": 5}),
    ],
)
def test_slime_never_gets_an_empty_response_or_prompt(
    qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch, how: str, outputs: list, limits: dict
) -> None:
    """slime slices a sample's response as `tokens[-response_length:]`, the whole sequence for 0, against
    `response_length` logits: the training step fails on a shape mismatch (and an empty prompt slices
    the previous sample's logits). An env whose reset failed gave a sample with no tokens at all; an
    engine failing at once, an env done at reset, or a prompt over max_context_len one without a
    response. Each now has the prompt and one untrained response token (the turn-ending token)."""
    config = runtime(**limits)
    runner = EpisodeRunner(
        config, FixedEngine(outputs), env_factory=_EndsFactory(how), chat=qwen_chat, reward=_Returns(0.0)
    )

    async def built(args: Any, runtime_config: Any) -> EpisodeRunner:
        return runner

    monkeypatch.setattr(hooks, "_runner", built)
    row = task()
    args = SimpleNamespace(t3rl=config, rollout_batch_size=10**6, n_samples_per_prompt=1)
    sample = asyncio.run(hooks.generate(args, Sample(prompt=row["prompt"], metadata=row["metadata"]), {}))
    assert sample.response_length >= 1 and len(sample.tokens) > sample.response_length
    assert sample.response_length == len(sample.loss_mask) == len(sample.rollout_log_probs)
    assert sample.tokens[: len(sample.tokens) - sample.response_length] == qwen_chat.prompt_ids(
        row["prompt"], TOOLS
    )
    assert not any(sample.loss_mask) and not any(sample.rollout_log_probs)


def test_turn_credit_takes_a_failed_episode_in_its_batch() -> None:
    """A failed episode (here its world could not start) has no outcome, hence no turn record; the log
    hook removes it with its group and counts it against rollout.max_failure_rate. The turn-credit
    post-process raised on it ("a sample has no turn rewards"), ending the run on the first failure
    whatever the rate allows. Its values now are its outcome score (mask 0, never trained on) and the
    other groups' advantages are those of a batch without it."""

    def sample(reward: float, length: int, record: dict | None, failed: bool = False) -> Sample:
        metadata: dict[str, Any] = {"turn_credit": record}
        if failed:
            metadata[METADATA_KEY] = Failure("env", "KeyError", "cannot start the episode").as_dict()
        return Sample(reward=reward, response_length=length, metadata=metadata, remove_sample=failed)

    good = [
        sample(1.0, 4, {"rewards": [1.0], "spans": [[0, 4]]}),
        sample(0.0, 3, {"rewards": [0.0], "spans": [[0, 3]]}),
    ]
    broken = [sample(0.0, 1, None, failed=True), sample(1.0, 2, {"rewards": [1.0], "spans": [[0, 2]]})]
    for sibling in broken:
        sibling.remove_sample = True
    args = SimpleNamespace(n_samples_per_prompt=2, t3rl={"turn_credit": {"outcome_weight": 1.0}})
    raw, rewards = turn_level_rewards(args, [*good, *broken])
    alone = turn_level_rewards(args, good)[1]
    assert raw == [1.0, 0.0, 0.0, 1.0]
    assert [r.tolist() for r in rewards[:2]] == [r.tolist() for r in alone]
    assert [len(r) for r in rewards[2:]] == [1, 2]


def test_an_episode_past_the_models_context_is_truncated_not_an_engine_failure(qwen_chat: ChatFormat) -> None:
    """Without max_context_len, an episode that outgrows the model's context meets SGLang's 400 ("The
    input (… tokens) is longer than the model's context length …", or input + max_new_tokens): the
    episode ended `aborted` as an engine failure, removed with its group and counted toward the
    failure rate that stops the run, for the policy's own long episode. It ends truncated now."""
    call = _echo(qwen_chat, "x")
    ids = [*qwen_chat.encode(call), qwen_chat.stop_token_ids[0]]
    answers = [
        web.json_response(
            {
                "meta_info": {
                    "finish_reason": {"type": "stop"},
                    "output_token_logprobs": [[-0.5, t, None] for t in ids],
                }
            }
        ),
        web.json_response(
            {
                "error": {
                    "message": "The input (40961 tokens) is longer than the model's context length "
                    "(40960 tokens)."
                }
            },
            status=400,
        ),
    ]

    async def answer(request: web.Request) -> web.Response:
        return answers.pop(0)

    async def play() -> EpisodeResult:
        app = web.Application()
        app.router.add_post("/generate", answer)
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        engine = SGLangEngine(SGLangEngineConfig(url=f"http://127.0.0.1:{port}", timeout_s=5, max_attempts=1))
        try:
            return await run_episode(
                task(), env=ToyEnv(), engine=engine, chat=qwen_chat, parser=family_parser(qwen_chat),
                sampling=SamplingParams(), limits=RolloutConfig(),
            )  # fmt: skip
        finally:
            await engine.aclose()
            await runner.cleanup()

    result = asyncio.run(play())
    assert result.status == "truncated" and result.failure is None, result.error
    assert result.num_model_calls == 2
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)
