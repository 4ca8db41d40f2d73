"""Runtime kinds of round nine: what an SGLang answer's log-probs and bookkeeping must be (a JSON
number at most 0; counts that are integers), and a world released however its episode ends (cancelled,
or its parser failing after it was built)."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.answers import CALL_META
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.sglang_http import BadResponse, parse_generation
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import METADATA_KEY
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.types import Transition
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner
from tests.rollout.fakes import FixedEngine, ToyEnv, family_parser, play, task
from tests.rollout.test_runner import ToyFactory, toy_runner
from tests.support.slime_sample import Sample


def _body(log_probs: list[Any] | None = None, finish: Any = None, **meta: Any) -> bytes:
    entries = [[lp, 5 + i, None] for i, lp in enumerate(log_probs or [-0.2, -0.1])]
    info = {"finish_reason": finish or {"type": "stop"}, "output_token_logprobs": entries, **meta}
    return json.dumps({"text": "", "meta_info": info}).encode()


# --- Log-probs that are no log-probability --------------------------------------------------------------


@pytest.mark.parametrize("log_prob", [True, False, "-0.5"])
def test_a_log_prob_that_is_no_json_number_is_a_bad_response(log_prob: Any) -> None:
    """float() took true as log-prob 1.0, false as 0.0 and "-0.5" as -0.5 into slime's
    rollout_log_probs: numbers the server never computed (a JSON log-prob is a number)."""
    with pytest.raises(BadResponse, match="log-probs that are no JSON number"):
        parse_generation(_body([-0.2, log_prob]))


@pytest.mark.parametrize("finish", [["stop"], {"type": ["stop"]}, {"type": {"stop": 1}}])
def test_a_finish_reason_of_another_shape_is_a_bad_response(finish: Any) -> None:
    """A list raised TypeError (unhashable) out of the client: not retried, and the episode's error
    named no answer."""
    with pytest.raises(BadResponse, match="finish_reason"):
        parse_generation(_body(finish=finish))


def _answered(chat: ChatFormat, log_prob: float, second: float) -> EpisodeResult:
    """An episode whose one answer's log-probs are `log_prob`, its second token's `second`."""
    ids = [*chat.encode("The sum is 3."), chat.stop_token_ids[0]]
    log_probs = [log_prob] * len(ids)
    log_probs[1] = second
    return play(
        chat,
        ToyEnv(),
        FixedEngine([Generation(ids, log_probs, "stop")]),
        RolloutConfig(max_response_len=64),
        SamplingParams(max_new_tokens=32),
    )


@pytest.mark.parametrize("log_prob", [0.9, 3.0, 1e300])
def test_a_positive_log_prob_from_any_engine_is_the_engines_failure(
    qwen_chat: ChatFormat, log_prob: float
) -> None:
    """A log-prob is at most 0: a probability (0.9), a logit (3.0) or a sign error went into the
    trajectory with loss mask 1, and slime's importance ratios were built on it."""
    result = _answered(qwen_chat, -0.1, log_prob)
    assert result.status == "aborted" and result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration")
    assert "above 0" in result.error and sum(result.loss_mask) == 0
    assert all(lp <= 0 for lp in result.log_probs)


def test_log_probs_at_zero_or_rounded_past_it_are_the_models_own(qwen_chat: ChatFormat) -> None:
    """The scripted engine answers 0.0; a log-softmax computed as log(softmax) may round to 1e-7."""
    result = _answered(qwen_chat, 0.0, 1e-7)
    assert result.failure is None or result.failure.error_type != "BadGeneration"
    assert sum(result.loss_mask) == len(qwen_chat.encode("The sum is 3.")) + 1


@pytest.mark.parametrize(
    "output_ids",
    [[5, 6, 7], [5], [5, 8], "56", None],
    ids=["more-ids", "fewer-ids", "other-ids", "text", "absent"],
)
def test_log_probs_are_one_per_output_token(output_ids: Any) -> None:
    """SGLang answers its tokens as output_ids and with their log-probs; its speculative decoding has
    answered log-probs past the returned tokens (accepted drafts beyond a stop): t3rl trained on the
    log-probs' tokens, ones the server never returned as its output."""
    body = json.loads(_body([-0.2, -0.1]))
    if output_ids is not None:
        body["output_ids"] = output_ids
    raw = json.dumps(body).encode()
    if output_ids is None:  # an older server or a stand-in that answers no output_ids
        assert parse_generation(raw).token_ids == [5, 6]
        return
    with pytest.raises(BadResponse, match="output_ids"):
        parse_generation(raw)
    body["output_ids"] = [5, 6]
    assert parse_generation(json.dumps(body).encode()).token_ids == [5, 6]


def test_an_answer_without_log_probs_says_what_drops_them() -> None:
    """It said `invalid /generate response (KeyError: 'output_token_logprobs')`: nothing about the
    return_logprob t3rl asks for, nor what answers without it."""
    body = b'{"output_ids": [5], "meta_info": {"finish_reason": {"type": "stop"}, "prompt_tokens": 3}}'
    with pytest.raises(BadResponse, match=r"no output_token_logprobs.*return_logprob"):
        parse_generation(body)


# --- The call's bookkeeping --------------------------------------------------------------------------------

_NOT_COUNTS = ["12", 2.5, -3, True, None, {"n": 1}, [1]]


@pytest.mark.parametrize("value", _NOT_COUNTS)
def test_a_meta_count_that_is_no_count_is_left_out(value: Any) -> None:
    generation = parse_generation(_body(prompt_tokens=40, cached_tokens=value, spec_verify_ct=value))
    assert generation.meta == {"prompt_tokens": 40}
    assert generation.token_ids == [5, 6]  # bookkeeping, never output: the answer stands


def test_a_non_finite_meta_count_is_left_out() -> None:
    body = b'{"meta_info": {"finish_reason": "stop", "output_token_logprobs": [[-0.1, 5, null]], '
    body += b'"cached_tokens": NaN, "prompt_tokens": Infinity, "completion_tokens": 1}}'
    assert parse_generation(body).meta == {"completion_tokens": 1}


@pytest.mark.parametrize(
    ("version", "kept"),
    [("7", "7"), (7, "7"), ("w\ud800", "w\ufffd"), (True, None), (1.5, None), ({"v": 1}, None)],
)
def test_a_weight_version_is_text(version: Any, kept: str | None) -> None:
    """slime keeps each call's version in the sample's weight_versions (text): an int names the same
    version, a lone surrogate no UTF-8 log can hold becomes U+FFFD, anything else is left out."""
    meta = parse_generation(_body(weight_version=version)).meta
    assert meta.get("weight_version") == kept


@pytest.mark.parametrize("value", ["12", math.nan, -3])
def test_slimes_sample_sums_only_counts(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat, value: Any
) -> None:
    """slime sums each call's cached and prompt tokens into the sample: a "12" raised TypeError out of
    generate (slime's rollout stopped), a NaN or a negative made its prefix-cache hit rate no rate."""
    ids = [*qwen_chat.encode("The sum is 3."), qwen_chat.stop_token_ids[0]]
    entries = ", ".join(f"[-0.1, {token}, null]" for token in ids)
    raw = json.dumps(value) if not (isinstance(value, float) and math.isnan(value)) else "NaN"
    body = (
        f'{{"meta_info": {{"finish_reason": {{"type": "stop"}}, "output_token_logprobs": [{entries}], '
        f'"prompt_tokens": 40, "cached_tokens": {raw}, "weight_version": "3"}}}}'
    ).encode()
    engine = FixedEngine([parse_generation(body), parse_generation(body)])  # the toy task's two answers
    use_runner(monkeypatch, qwen_chat, engine=engine)
    sample = asyncio.run(hooks.generate(slime_args(1.0), toy_sample(0, group=0), {}))
    info = sample.prefix_cache_info
    assert (info.cached_tokens, info.total_prompt_tokens) == (0, 80)
    assert sample.weight_versions == ["3", "3"]
    assert METADATA_KEY not in sample.metadata and sample.status is not Sample.Status.FAILED


# --- A world released however its episode ends ---------------------------------------------------------


class _Hangs(Engine):
    """An engine whose call never answers (a request in flight when the episode is cancelled)."""

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        self.called.set()
        await asyncio.Event().wait()
        raise AssertionError("not reached")


def test_a_cancelled_episode_releases_its_world(qwen_chat: ChatFormat) -> None:
    """Ctrl-C in an eval and a task slime drops cancel episodes in flight: run_episode released its
    world only when the episode ended on its own, so each cancelled OpenEnv episode kept its session
    (and its client's connections) open on the environment's server."""
    env, engine = ToyEnv(), _Hangs()

    async def cancelled() -> None:
        episode = asyncio.ensure_future(
            run_episode(
                task(),
                env=env,
                engine=engine,
                chat=qwen_chat,
                parser=family_parser(qwen_chat),
                sampling=SamplingParams(max_new_tokens=8),
                limits=RolloutConfig(),
            )
        )
        await engine.called.wait()
        episode.cancel()
        with pytest.raises(asyncio.CancelledError):
            await episode

    asyncio.run(cancelled())
    assert env.closed


def test_a_world_whose_parser_fails_is_released(qwen_chat: ChatFormat) -> None:
    """A row whose late tools no parser can read failed after its world was built: the world was
    never closed."""
    factory = ToyFactory()
    runner = toy_runner(qwen_chat, factory=factory)
    row = task()
    row["metadata"] = {**row["metadata"], "late_tools": [{"nameless": True}]}
    result, _ = asyncio.run(runner.run(row, "eval"))
    assert result.status == "failed" and result.failure is not None
    assert factory.envs and all(env.closed for env in factory.envs)


# --- A message the chat template writes nothing of ----------------------------------------------------------


class _Answers(ToyEnv):
    """The toy world, answering each turn with a message of `role`."""

    role = "ipython"

    async def step(self, action: Any) -> Transition:
        return Transition(messages=[{"role": self.role, "content": "the tool's result"}])


def _played(chat: ChatFormat, env: ToyEnv, row: dict[str, Any] | None = None) -> EpisodeResult:
    ids = [*chat.encode("The sum is 3."), chat.stop_token_ids[0]]
    return asyncio.run(
        run_episode(
            row or task(),
            env=env,
            engine=FixedEngine([Generation(ids, [-0.1] * len(ids), "stop")] * 2),
            chat=chat,
            parser=family_parser(chat),
            sampling=SamplingParams(max_new_tokens=32),
            limits=RolloutConfig(max_num_steps=2),
        )
    )


@pytest.fixture(scope="module")
def deepseek_chat() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("deepseek_v3"), "deepseek_v3")


@pytest.mark.parametrize("role", ["ipython", "function", "observation"])
def test_a_world_message_the_template_skips_is_the_worlds_failure(
    deepseek_chat: ChatFormat, role: str
) -> None:
    """DeepSeek-V3's template writes system, user, assistant and tool messages and skips any other: a
    world answering its tool results as `ipython` played on with the model never shown them, and the
    episode was trained on as the policy's own."""
    _Answers.role = role
    result = _played(deepseek_chat, _Answers())
    assert result.status == "failed" and result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("env", "UnrenderedRole")
    assert f"'{role}'" in result.error and "tool" in result.error
    assert result.num_model_calls == 1


def test_a_row_message_the_template_skips_is_refused_before_any_call(deepseek_chat: ChatFormat) -> None:
    row = task()
    row["prompt"] = [{"role": "developer", "content": "Always answer in French."}, *row["prompt"]]
    result = _played(deepseek_chat, ToyEnv(), row)
    assert result.failure is not None and result.failure.error_type == "UnrenderedRole"
    assert result.num_model_calls == 0 and "'developer'" in result.error


def test_a_template_that_writes_the_role_plays_it(qwen_chat: ChatFormat) -> None:
    _Answers.role = "ipython"
    result = _played(qwen_chat, _Answers())
    assert result.failure is None and result.num_model_calls == 2


def test_no_shipped_template_drops_the_standard_roles(chat: ChatFormat) -> None:
    """No false failure: every family writes the roles t3rl's worlds and rows use."""
    assert not any(chat.drops_role(role) for role in ("system", "user", "assistant", "tool"))


# --- A cancelled call of the transformers engine ------------------------------------------------------------


def test_a_cancelled_hf_call_stops_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine decodes in a thread, which a cancellation cannot stop: it went on to max_new_tokens,
    holding a core past its slot, and asyncio.run's end waited for it (Ctrl-C in an eval hung for the
    whole generation). Now the thread stops at the next token."""
    import threading

    from t3rl_core.engines import hf
    from t3rl_core.engines.config import HFEngineConfig
    from tests.support.tiny_stack import shared_tiny_stack

    # The run's shared tiny model (built once for the modules that load it; read only): any small model
    # decodes in the engine's thread, and one build less is ~2.5 s of CPU.
    model_dir = shared_tiny_stack()[1]
    chat = ChatFormat.from_pretrained(model_dir)
    engine = hf.HFEngine(HFEngineConfig(model_path=str(model_dir)), chat=chat)
    first, go_on = threading.Event(), threading.Event()
    sampled: list[int] = []
    sample = hf._sample

    def held_at_first(logits: Any, sampling: SamplingParams, generator: Any) -> tuple[int, float]:
        sampled.append(1)
        if len(sampled) == 1:
            first.set()
            go_on.wait(timeout=300)  # a failure guard: the test sets it once the call is cancelled
        return sample(logits, sampling, generator)

    monkeypatch.setattr(hf, "_sample", held_at_first)
    prompt = chat.prompt_ids([{"role": "user", "content": "What is 2 + 2?"}])

    async def cancelled() -> None:
        call = asyncio.ensure_future(engine.generate(prompt, SamplingParams(max_new_tokens=64)))
        await asyncio.to_thread(first.wait, 300)
        call.cancel()
        while not call.done():  # the cancellation reaches the call (a loop turn, no wall-clock wait)
            await asyncio.sleep(0)
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await call

    asyncio.run(cancelled())  # returns once the decoding thread has ended
    assert len(sampled) == 1, f"the thread decoded {len(sampled)} tokens after its call was cancelled"


# --- An error answered with HTTP 200; a tool named twice ------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "model overloaded", "code": 503}},
        {"object": "error", "message": "model overloaded"},
    ],
)
def test_an_error_answered_with_http_200_says_what_the_server_said(body: dict[str, Any]) -> None:
    """It said `invalid /generate response (KeyError: 'meta_info')`."""
    with pytest.raises(BadResponse, match=r"answered an error with HTTP 200: .*model overloaded"):
        parse_generation(json.dumps(body).encode())


def test_a_tool_named_twice_with_two_schemas_is_no_task(qwen_chat: ChatFormat) -> None:
    """The model read both schemas, a call names the tool only and the world runs its one function: a
    call following the other schema's parameters was judged against one it did not follow, and
    trained on."""
    import copy

    from tests.rollout.fakes import TOOLS

    other = copy.deepcopy(TOOLS[0])
    other["function"]["parameters"]["properties"] = {"x": {"type": "string"}}
    row = task()
    row["metadata"] = {**row["metadata"], "tools": [*TOOLS, other]}
    result, _ = asyncio.run(toy_runner(qwen_chat).run(row, "eval"))
    assert result.failure is not None and result.failure.error_type == "InvalidTask"
    assert "'add' twice" in result.error and result.num_model_calls == 0
    row["metadata"] = {**row["metadata"], "tools": [*TOOLS, copy.deepcopy(TOOLS[0])]}  # the same twice
    result, _ = asyncio.run(toy_runner(qwen_chat).run(row, "eval"))
    assert result.failure is None and result.status == "completed"


class _NoGeneration(Engine):
    """A plugin engine answering what is no Generation."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        return self.answer


@pytest.mark.parametrize("answer", [None, ([5, 6], [-0.1, -0.1], "stop"), {"token_ids": [5]}])
def test_an_engine_answering_no_generation_is_the_engines_failure(qwen_chat: ChatFormat, answer: Any) -> None:
    """None or a tuple raised AttributeError in the episode loop: counted as t3rl's own bug."""
    result = play(qwen_chat, ToyEnv(), _NoGeneration(answer), RolloutConfig(max_response_len=64))
    assert result.status == "aborted" and result.failure is not None
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration")
    assert "not a Generation" in result.error and sum(result.loss_mask) == 0


# --- Whatever an SGLang answer holds -------------------------------------------------------------------

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
_ENTRY = st.one_of(
    st.tuples(st.floats(-30, 0.0), st.integers(0, 500), st.none()).map(list),
    st.lists(_JSON_SCALARS, max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(
    entries=st.lists(_ENTRY, max_size=6),
    finish=st.one_of(
        st.sampled_from(["stop", "length", "abort", "other"]), _JSON_SCALARS, st.lists(_JSON_SCALARS)
    ),
    meta=st.dictionaries(st.sampled_from(sorted(CALL_META)), _JSON_SCALARS, max_size=4),
    output_ids=st.one_of(st.none(), st.just("same"), st.lists(st.integers(0, 500), max_size=6)),
)
def test_every_sglang_answer_is_a_usable_generation_or_a_bad_response(
    entries: list[Any], finish: Any, meta: dict[str, Any], output_ids: Any
) -> None:
    """Nothing else escapes the client, and what it keeps is what slime and the trajectory may hold."""
    info = {"finish_reason": finish, "output_token_logprobs": entries, **meta}
    body: dict[str, Any] = {"meta_info": info}
    if output_ids == "same":
        body["output_ids"] = [
            entry[1] if isinstance(entry, list) and len(entry) > 1 else 0 for entry in entries
        ]
    elif output_ids is not None:
        body["output_ids"] = output_ids
    try:
        generation = parse_generation(json.dumps(body).encode())
    except BadResponse:
        return
    assert all(type(token) is int and token >= 0 for token in generation.token_ids)
    assert all(type(lp) is float and math.isfinite(lp) for lp in generation.log_probs)
    assert "output_ids" not in body or body["output_ids"] == generation.token_ids
    for key, value in generation.meta.items():
        expected = str if key == "weight_version" else int
        assert type(value) is expected and (expected is str or value >= 0)
