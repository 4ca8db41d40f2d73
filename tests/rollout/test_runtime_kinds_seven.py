"""Runtime kinds of round seven: a sample slime hands the generate hook a second time, a model server
whose answer is not what was asked for (more tokens than max_new_tokens, ids that are no token), and
a server that says "too many requests"."""

from __future__ import annotations

import asyncio
import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from aiohttp import web
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RolloutConfig, RuntimeConfig
from t3rl_core.engines import sglang_http
from t3rl_core.engines.base import Generation, GenerationContext, SamplingParams
from t3rl_core.engines.sglang_http import BadResponse, parse_generation
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import METADATA_KEY
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult
from t3rl_core.rollout.runner import EpisodeRunner
from tests.engines.test_sglang_http import FaultyServer, engine_for, serving
from tests.hooks.slime_fakes import Factory, Progress, slime_args, toy_sample, use_runner
from tests.hooks.test_hooks_slime_sample import MetaEngine
from tests.rollout.fakes import TOOLS, FixedEngine, ToyEnv, play, task
from tests.rollout.test_runner import toy_runner
from tests.support.slime_sample import Sample

# --- A sample slime hands back (fully-async rollout requeues an aborted group) -------------------------


class _AbortsAfterOneCall(MetaEngine):
    """The scripted policy with SGLang's bookkeeping, aborted on its second call (slime's abort)."""

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        if self.metas:
            return Generation([], [], "abort", error="SGLang aborted the request: abort_all")
        return await super().generate(input_ids, sampling, context)


class _Rows(Factory):
    """Records the rows the hook hands the env factory."""

    def __init__(self) -> None:
        super().__init__(ToyEnv)
        self.rows: list[dict[str, Any]] = []

    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        self.rows.append(json.loads(json.dumps(row)))
        return super().__call__(row, mode)


def _generate(monkeypatch: pytest.MonkeyPatch, chat: ChatFormat, engine: Any, sample: Sample) -> _Rows:
    """One `hooks.generate` of `sample` with `engine`; returns the factory that saw the env's row."""
    factory = _Rows()

    async def runner(args: Any, runtime: RuntimeConfig) -> EpisodeRunner:
        return EpisodeRunner(runtime, engine, env_factory=factory, chat=chat, reward=Progress())

    monkeypatch.setattr(hooks, "_runner", runner)
    monkeypatch.setattr(hooks, "_BUDGET", None)
    asyncio.run(hooks.generate(slime_args(1.0, sglang_speculative_algorithm="EAGLE"), sample, {}))
    return factory


def _comparable(sample: Sample) -> dict[str, Any]:
    """The sample as slime's debug dump keeps it, without the wall-clock timings."""
    data = sample.to_dict()
    data.pop("non_generation_time")
    metrics = data["metadata"]["t3rl_metrics"]
    for name in [name for name in metrics if name.startswith("time_")]:
        metrics.pop(name)
    return data


def test_a_sample_generated_again_is_the_sample_a_fresh_one_becomes(monkeypatch, qwen_chat) -> None:
    """slime's fully-async rollout puts a group holding an aborted sample back into its buffer, and the
    hook is called on that same sample object again. The first, aborted episode's failure record,
    remove_sample flag, weight versions and prefix-cache and draft counters stayed on it, and its
    `outcome`, `messages` and metrics went to the env as task metadata: a healthy second episode was
    removed from training with its whole group as an engine failure, its counters summed over both."""
    reused = toy_sample(3, group=0)
    _generate(monkeypatch, qwen_chat, _AbortsAfterOneCall(qwen_chat), reused)
    assert reused.status is Sample.Status.ABORTED and reused.remove_sample
    assert METADATA_KEY in reused.metadata and reused.weight_versions == ["v1"]

    again = _generate(monkeypatch, qwen_chat, MetaEngine(qwen_chat), reused)
    fresh_sample = toy_sample(3, group=0)
    fresh = _generate(monkeypatch, qwen_chat, MetaEngine(qwen_chat), fresh_sample)
    assert again.rows == fresh.rows
    assert _comparable(reused) == _comparable(fresh_sample)
    assert reused.status is Sample.Status.COMPLETED and not reused.remove_sample
    assert METADATA_KEY not in reused.metadata and reused.reward == 1.0


class _Scribbles(_Rows):
    """A factory that writes into the row it is handed (a world keeping its state there)."""

    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        row["metadata"]["scratch"] = "the env's"
        return super().__call__(row, mode)


def test_what_the_env_writes_into_its_row_stays_out_of_the_sample(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    factory = _Scribbles()

    async def runner(args: Any, runtime: RuntimeConfig) -> EpisodeRunner:
        return EpisodeRunner(
            runtime, MetaEngine(qwen_chat), env_factory=factory, chat=qwen_chat, reward=Progress()
        )

    monkeypatch.setattr(hooks, "_runner", runner)
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    assert factory.rows[0]["metadata"]["scratch"] == "the env's" and "scratch" not in sample.metadata


# --- A model server's answer that is not what was asked for -------------------------------------------


def _one_call(chat: ChatFormat, generation: Generation, max_new_tokens: int = 8) -> Any:
    return play(
        chat,
        ToyEnv(),
        FixedEngine([generation]),
        RolloutConfig(max_response_len=64),
        SamplingParams(max_new_tokens=max_new_tokens),
    )


def test_more_tokens_than_asked_for_is_the_engines_failure(qwen_chat: ChatFormat) -> None:
    """A server that answers 20 tokens to max_new_tokens=8 (a router mixing up replies, a server
    ignoring the limit): the tokens went into the trajectory and, past the episode's response limit,
    into a slime sample longer than the batch was sized for."""
    stop = qwen_chat.stop_token_ids[0]
    ids = [*qwen_chat.encode("one two three four five six seven eight nine ten eleven")[:19], stop]
    result = _one_call(qwen_chat, Generation(ids, [-0.1] * len(ids), "stop"))
    assert result.status == "aborted"
    assert result.failure is not None and (result.failure.kind, result.failure.error_type) == (
        "engine",
        "BadGeneration",
    )
    assert "20 tokens" in result.error and "max_new_tokens=8" in result.error
    assert sum(result.loss_mask) == 0  # none of the answer's tokens is trained on


@pytest.mark.parametrize("token", [-1, -(2**40)])
def test_a_negative_token_id_is_the_engines_failure(qwen_chat: ChatFormat, token: int) -> None:
    """It ended as a t3rl bug (an OverflowError in the decoder) that counted against t3rl."""
    stop = qwen_chat.stop_token_ids[0]
    result = _one_call(qwen_chat, Generation([token, stop], [-0.1, -0.1], "stop"))
    assert result.status == "aborted" and result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration")
    assert str(token) in result.error


@pytest.mark.parametrize(
    "entry",
    [[-0.1, 3.7, None], [-0.1, True, None], [-0.1, "12", None], [-0.1, -4, None], [-0.1, None, None]],
)
def test_sglang_token_ids_that_are_no_token_id_are_a_bad_response(entry: list[Any]) -> None:
    """3.7 became token 3, true token 1 and "12" token 12: a token nobody sampled, trained on."""
    body = {
        "meta_info": {"finish_reason": {"type": "stop"}, "output_token_logprobs": [[-0.2, 5, None], entry]}
    }
    with pytest.raises(BadResponse, match="token id"):
        parse_generation(json.dumps(body).encode())


_LOG_PROB = st.one_of(
    st.floats(-30.0, 0.0), st.sampled_from([math.nan, math.inf, -math.inf, -1e308])
)  # fmt: skip


@st.composite
def _answer(draw: st.DrawFn, chat: ChatFormat) -> Generation:
    """Whatever an engine may hand back: any ids (some no token's), any length, any log-probs."""
    ids = draw(
        st.lists(
            st.one_of(st.integers(0, 300), st.sampled_from(chat.stop_token_ids), st.integers(-5, -1)),
            max_size=14,
        )
    )
    log_probs = draw(st.lists(_LOG_PROB, min_size=len(ids), max_size=len(ids)))
    return Generation(ids, log_probs, draw(st.sampled_from(["stop", "length", "abort"])))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_no_engine_answer_breaks_an_episodes_accounting(qwen_chat: ChatFormat, data: st.DataObject) -> None:
    """Whatever the engine answers, the episode ends without raising, its three response lists stay
    aligned and within the response limit, every trained token is one the engine sampled in a call
    that asked for it, with a finite log-prob, and an answer no model could give is the engine's
    failure. A NaN log-prob from an engine other than SGLang's client reached slime's importance
    ratios (rollout_log_probs) and made the loss NaN."""
    answers = data.draw(st.lists(_answer(qwen_chat), min_size=1, max_size=4))
    engine = FixedEngine(list(answers))
    result = play(
        qwen_chat, ToyEnv(), engine, RolloutConfig(max_response_len=40), SamplingParams(max_new_tokens=8)
    )
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs) <= 40
    trained = [lp for lp, m in zip(result.log_probs, result.loss_mask, strict=True) if m]
    assert all(math.isfinite(lp) for lp in result.log_probs) and len(trained) == sum(result.loss_mask)
    assert all(token >= 0 for token in result.response_ids)
    played = answers[: engine.calls]
    malformed = [
        a for a in played if len(a.token_ids) > 8 or min(a.token_ids, default=0) < 0
        or not all(map(math.isfinite, a.log_probs))
    ]  # fmt: skip
    if malformed:
        assert result.failure is not None and result.failure.label == "engine/BadGeneration"
    elif result.failure is not None:
        assert result.failure.kind == "engine" and result.status == "aborted"


# --- "Too many requests" ---------------------------------------------------------------------------------


class _Busy(FaultyServer):
    """Answers 429 (sgl-router's queue full) or 408 (a request that waited in it too long), with a
    Retry-After header, then as scripted."""

    def __init__(self, script: list[str], retry_after: str | None) -> None:
        super().__init__(script)
        self.retry_after = retry_after

    async def _respond(self, mode: str, request: web.Request) -> web.StreamResponse:
        if mode in ("429", "408"):
            headers = {} if self.retry_after is None else {"Retry-After": self.retry_after}
            return web.Response(status=int(mode), text="Too many requests", headers=headers)
        return await super()._respond(mode, request)


async def _ask(server: FaultyServer, **config: Any) -> Generation:
    async with serving(server) as url:
        engine = engine_for(url, **config)
        try:
            return await engine.generate([1, 2, 3], SamplingParams())
        finally:
            await engine.aclose()


@pytest.mark.parametrize("status", ["429", "408"])
@pytest.mark.parametrize("retry_after", [None, "0", "Wed, 21 Oct 2015 07:28:00 GMT", "soon"])
def test_too_many_requests_is_retried(status: str, retry_after: str | None) -> None:
    """A 429 or 408 ended the episode aborted at once, an engine failure counted toward the rate that
    stops the run, where the router only asked to come back later."""
    server = _Busy([status, "ok"], retry_after)
    generation = asyncio.run(_ask(server))
    assert (generation.finish_reason, generation.token_ids, len(server.requests)) == ("stop", [5, 6, 7], 2)


def test_too_many_requests_every_time_aborts_after_all_attempts() -> None:
    server = _Busy(["429"], "0")
    generation = asyncio.run(_ask(server, max_attempts=2))
    assert generation.finish_reason == "abort" and len(server.requests) == 2
    assert "HTTP 429" in generation.error and "failed 2 time(s)" in generation.error


def test_the_wait_before_a_retry_honours_retry_after_within_the_request_timeout(monkeypatch) -> None:
    monkeypatch.setattr(sglang_http, "backoff_delay", lambda attempt, initial_s: 0.01)
    wait = sglang_http.retry_wait
    assert wait(1, 0.5, timeout_s=30.0, retry_after=None) == 0.01
    assert wait(1, 0.5, timeout_s=30.0, retry_after="7") == 7.0
    assert wait(1, 0.5, timeout_s=30.0, retry_after="7200") == 30.0  # never longer than one request's time
    assert wait(1, 0.5, timeout_s=30.0, retry_after="-3") == 0.01
    assert wait(1, 0.5, timeout_s=30.0, retry_after="nonsense") == 0.01
    # An HTTP date in the past: no wait beyond the back-off.
    assert wait(1, 0.5, timeout_s=30.0, retry_after="Wed, 21 Oct 2015 07:28:00 GMT") == 0.01


# --- A row that is no chat task --------------------------------------------------------------------------


def _row(**change: Any) -> Sample:
    sample = toy_sample(0, group=0)
    for key, value in change.items():
        setattr(sample, key, value)
    return sample


@pytest.mark.parametrize(
    ("sample", "named"),
    [
        # slime's --apply-chat-template renders the prompt to text (and a dataset of plain strings is text).
        (_row(prompt="<|im_start|>user\nAdd 1 and 2.<|im_end|>\n"), "prompt is text"),
        (_row(prompt=None), "prompt is NoneType"),
        (_row(prompt=[{"content": "Add 1 and 2."}]), "prompt message 0"),
        (_row(prompt=[{"role": "user", "content": None}]), "prompt message 0"),
        (_row(prompt=["Add 1 and 2."]), "prompt message 0"),
        # Parts of text are their text (wave eight); a part of another type is no text.
        (_row(prompt=[{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]), "message 0"),
        (_row(metadata='{"tools": []}'), "metadata is str"),
        (_row(metadata={"tools": json.dumps(TOOLS), "questions": ["q"]}), "metadata.tools is str"),
        (_row(metadata={"tools": [*TOOLS, "add"], "questions": ["q"]}), "metadata.tools[2]"),
        (_row(metadata={"tools": [{"type": "function"}], "questions": ["q"]}), "metadata.tools[0]"),
        (_row(metadata={"tools": [{"function": {"name": 3}}], "questions": ["q"]}), "metadata.tools[0]"),
    ],
    ids=[
        "text",
        "none",
        "no-role",
        "content-none",
        "bare-string",
        "content-parts",
        "metadata-text",
        "tools-text",
        "tool-text",
        "tool-nameless",
        "tool-name-number",
    ],
)
def test_a_row_that_is_no_chat_task_is_a_failed_sample_naming_it(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat, sample: Sample, named: str
) -> None:
    """A text prompt raised a ValueError out of the hook (slime's rollout died on "dictionary update
    sequence element #0 has length 1"), a message without a role or content failed as t3rl's own bug
    (a template's UndefinedError), and a JSON-text tool list was read as a list of characters."""
    use_runner(monkeypatch, qwen_chat)
    done = asyncio.run(hooks.generate(slime_args(1.0), sample, {}))
    failure = done.metadata[METADATA_KEY]
    assert (failure["kind"], failure["error_type"]) == ("env", "InvalidTask")
    assert named in failure["message"]
    assert done.status is Sample.Status.FAILED and done.remove_sample
    assert done.response_length == len(done.loss_mask) == len(done.rollout_log_probs) == 1


def test_an_assistant_message_of_tool_calls_only_is_a_chat_message(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """OpenAI's form of a call turn (content None beside tool_calls) renders in every shipped template."""
    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    prompt = [
        {"role": "user", "content": "Add 1 and 2."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "3"},
        {"role": "user", "content": "Now add 3 and 4."},
    ]
    use_runner(monkeypatch, qwen_chat)
    done = asyncio.run(hooks.generate(slime_args(1.0), _row(prompt=prompt), {}))
    assert METADATA_KEY not in done.metadata and done.status is Sample.Status.COMPLETED


class _TooLong(FaultyServer):
    """Refuses every request as longer than it can take, in the words of `phrase`."""

    def __init__(self, phrase: str) -> None:
        super().__init__(["too_long"])
        self.phrase = phrase

    async def _respond(self, mode: str, request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": {"message": f"Input of 8190 tokens {self.phrase}."}}, status=400)


@pytest.mark.parametrize(
    "phrase",
    [
        # The scheduler's refusal: the input reaches the server's request limit, context_len - 6, or
        # less when the KV cache pool is smaller than the context.
        "exceeds the maximum allowed length (8186 tokens)",
        "is longer than the model's context length (8192 tokens)",
    ],
)
def test_a_request_the_server_refuses_as_too_long_ends_the_episode_by_length(phrase: str) -> None:
    """Near the end of its context (max_new_tokens cut to the few tokens left) or past a KV pool smaller
    than the context, SGLang's scheduler refuses the input with a 400 that names no "context length": it
    was an engine failure (removed with its group, counted toward the rate that stops the run) for
    the policy's own long episode."""
    generation = asyncio.run(_ask(_TooLong(phrase)))
    assert generation.finish_reason == "length" and generation.token_ids == []
    assert "8190 tokens" in generation.error


def test_a_request_someone_aborted_is_no_failure_counted_toward_the_rate(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """slime updates weights through SGLang's /pause_generation, whose default mode aborts every request
    in flight (finish_reason abort, no status code); in the fully-async rollout episodes are in flight
    then, and their groups go back into slime's buffer. Each such episode was counted as an engine
    failure toward rollout.max_failure_rate: the first weight update past the rate raised
    FailureRateExceeded out of the hook, and the fully-async worker dropped the group with it."""
    body = {
        "meta_info": {"finish_reason": {"type": "abort", "message": "Aborted"}, "output_token_logprobs": []}
    }
    paused = parse_generation(json.dumps(body).encode())
    assert paused.finish_reason == "abort" and paused.on_request
    refused = {"type": "abort", "message": "Input too long", "status_code": 400}
    body = {"meta_info": {"finish_reason": refused, "output_token_logprobs": []}}
    assert not parse_generation(json.dumps(body).encode()).on_request

    use_runner(monkeypatch, qwen_chat, engine=FixedEngine([paused]))
    sample = asyncio.run(hooks.generate(slime_args(0.0), toy_sample(0, group=0), {}))  # no failure allowed
    assert sample.status is Sample.Status.ABORTED and sample.remove_sample  # never trained on, still
    assert sample.metadata[METADATA_KEY]["error_type"] == "abort_requested"


# --- What a reward logs beside its value ----------------------------------------------------------------


class _Logs(Reward):
    """A reward of 1.0 whose metrics are `metrics`."""

    def __init__(self, metrics: dict[Any, Any]) -> None:
        self.metrics = metrics

    def __call__(self, inp: RewardInput) -> RewardResult:
        return RewardResult(1.0, dict(self.metrics))


@pytest.mark.parametrize(
    ("metrics", "named"),
    [
        ({"accuracy": math.nan}, "accuracy"),
        ({"ratio": math.inf}, "ratio"),
        ({"turns": None}, "turns"),
        ({"label": "right"}, "label"),
        ({3: 1.0}, "3"),
    ],
)
def test_a_reward_metric_no_mean_can_take_is_the_rewards_failure(
    qwen_chat: ChatFormat, metrics: dict[Any, Any], named: str
) -> None:
    """One NaN metric made its batch's rollout/<source>/<name> and rollout/average/<name> NaN (and the
    eval summary's mean), and a None or a text was dropped from the means without a word."""
    result, _ = asyncio.run(toy_runner(qwen_chat, reward=_Logs(metrics)).run(task()))
    assert result.failure is not None and result.failure.label == "reward/InvalidReward"
    assert named in result.failure.message


def test_real_reward_metrics_are_logged_as_built_in_floats(qwen_chat: ChatFormat) -> None:
    """numpy's float32 and int64 are no Python float or int: the hooks' means skipped them."""
    metrics = {"a": np.float32(0.5), "b": np.int64(2), "c": True, "d": 0.25}
    _, score = asyncio.run(toy_runner(qwen_chat, reward=_Logs(metrics)).run(task()))
    assert score.metrics == {"a": 0.5, "b": 2.0, "c": 1.0, "d": 0.25}
    assert all(type(value) is float for value in score.metrics.values())
    sample = SimpleNamespace(reward=1.0, status="completed", metadata={"reward_metrics": score.metrics})
    logged = hooks.category_metrics([sample], "rollout")
    assert {name: logged[f"rollout/average/{name}"] for name in metrics} == score.metrics
