"""Runtime hunt, wave four: what an engine's answer, a retried request, a slime sample's metadata and a
model's tags inside its own arguments do to an episode's token accounting (docs/explanation/tito.md,
"Hunted")."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiohttp import web

from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import ParsersConfig, RolloutConfig, RuntimeConfig
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig, SGLangEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.engines.sglang_http import SGLangEngine, parse_generation
from t3rl_core.envs.format_repair import FormatRepair
from t3rl_core.hooks import slime as hooks
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import run_episode
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import InvalidAction, ToolCall, ToolCallAction, Transition
from tests.engines.test_sglang_http import serving
from tests.hooks.slime_fakes import Factory, Progress, slime_args, toy_sample
from tests.rollout.fakes import TOOLS, ToyEnv, play, task
from tests.support.output_hunt import Hunt, hunted_options
from tests.support.slime_sample import Sample

CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'


def _ids(chat: ChatFormat, text: str) -> list[int]:
    return [*chat.encode(text), chat.stop_token_ids[0]]


class _Changed(Engine):
    """Answers the toy task's call, having changed its Generation's lists after building it (a plugin
    appending its stop token, or dropping a log-prob, once the dataclass checked the lengths); with
    `converted`, a log-prob is an int (the path that converts a plugin's answer to the declared types)."""

    def __init__(self, chat: ChatFormat, change: str, *, plain: bool, converted: bool = False) -> None:
        self.chat, self.change, self.converted = chat, change, converted
        self.answers_plain = plain  # type: ignore[misc]  # per instance: both paths of _generate

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        ids = _ids(self.chat, CALL)
        generation = Generation(ids, [-0.5] * len(ids), "stop")
        if self.change == "append_id":
            generation.token_ids.append(self.chat.stop_token_ids[0])
        else:
            generation.log_probs.pop()
        if self.converted:
            generation.log_probs[0] = -1  # type: ignore[call-overload]
        return generation


@pytest.mark.parametrize(
    ("change", "plain", "converted"),
    [("append_id", True, False), ("drop_log_prob", True, False), ("append_id", False, False),
     ("drop_log_prob", False, True)],
)  # fmt: skip
def test_an_answer_of_more_ids_than_log_probs_is_the_engines_failure(
    qwen_chat: ChatFormat, change: str, plain: bool, converted: bool
) -> None:
    """Before: the trajectory's TitoViolation failed the episode as t3rl's own bug (kind t3rl, counted
    against t3rl, a traceback in the record), or, on the conversion path, Generation's ValueError as
    an 'episode loop error'; the lists were the engine's."""
    engine = _Changed(qwen_chat, change, plain=plain, converted=converted)
    result = play(qwen_chat, ToyEnv(), engine, RolloutConfig())
    assert result.failure is not None and result.failure.label == "engine/BadGeneration", result.failure
    assert result.status == "aborted" and "log-probs (one per token is needed)" in (result.error or "")
    assert result.response_ids == result.loss_mask == result.log_probs == []  # nothing of it taken


# ------------------------------------------------------------------ a retry after a 5xx mid-episode


class _Server:
    """Answers each /generate with the next of `answers`: a body (HTTP 200) or (status, body)."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers, self.requests = list(answers), []

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        answer = self.answers.pop(0)
        status, body = answer if isinstance(answer, tuple) else (200, answer)
        return web.Response(status=status, text=json.dumps(body), content_type="application/json")


def _body(ids: list[int], log_prob: float, text: str = "") -> dict[str, Any]:
    return {
        "text": text,
        "output_ids": ids,
        "meta_info": {
            "finish_reason": {"type": "stop"},
            "output_token_logprobs": [[log_prob, token, None] for token in ids],
        },
    }


def test_a_retry_after_a_5xx_mid_episode_takes_each_answer_once(qwen_chat: ChatFormat) -> None:
    """The second call meets a 500 whose body holds a generation of its own, then its retry answers:
    the request is sent again whole (the same input ids: a /generate is not streamed, nothing of the
    failed attempt is kept), and the trained tokens are the two answers taken, once each, in order,
    with their own log-probs."""
    call, answer = _ids(qwen_chat, CALL), _ids(qwen_chat, "The sum is 3.")
    server = _Server(
        [
            _body(call, -0.25),
            (500, _body(_ids(qwen_chat, "never taken"), -9.0)),
            _body(answer, -0.75),
        ]
    )

    async def episode() -> Any:
        async with serving(server) as url:  # type: ignore[arg-type]
            engine = SGLangEngine(SGLangEngineConfig(url=url, max_attempts=2, backoff_s=0.0))
            try:
                return await run_episode(
                    task(("Add 1 and 2.",)),
                    env=ToyEnv(("Add 1 and 2.",)),
                    engine=engine,
                    chat=qwen_chat,
                    parser=ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), TOOLS),
                    sampling=SamplingParams(),
                    limits=RolloutConfig(),
                )
            finally:
                await engine.aclose()

    result = asyncio.run(episode())
    assert result.status == "completed" and result.failure is None, result.error
    assert server.requests[1]["input_ids"] == server.requests[2]["input_ids"]
    trained = [
        (t, lp) for t, m, lp in zip(result.response_ids, result.loss_mask, result.log_probs, strict=True) if m
    ]
    assert trained == [(t, -0.25) for t in call] + [(t, -0.75) for t in answer]
    assert server.requests[2]["input_ids"] == result.tokens[: len(server.requests[2]["input_ids"])]


def test_the_answers_text_is_never_read_for_tokens(qwen_chat: ChatFormat) -> None:
    """SGLang's `text` may disagree with the ids (a detokenizer's normalisation, a proxy): the ids and
    their log-probs are the answer, the text is read by nobody."""
    ids = _ids(qwen_chat, "The sum is 3.")
    truth = parse_generation(json.dumps(_body(ids, -0.5, text="The sum is 3.")).encode())
    lying = parse_generation(json.dumps(_body(ids, -0.5, text="</tool_call> something else")).encode())
    assert lying == truth and lying.token_ids == ids


# ------------------------------------------------------------------ slime's reward hook


@pytest.mark.parametrize("metadata", [["outcome"], "outcome", 3])
def test_reward_func_of_a_sample_whose_metadata_is_no_mapping_says_so(metadata: Any) -> None:
    """Before: AttributeError ('list' object has no attribute 'get') out of slime's reward model call."""
    sample = Sample()
    sample.metadata = metadata
    with pytest.raises(ValueError, match="no t3rl outcome"):
        asyncio.run(hooks.reward_func(slime_args(), sample))


# ------------------------------------------------------------------ tags inside an argument


@pytest.mark.parametrize("option", hunted_options(), ids=lambda option: option.name)
def test_a_tag_inside_an_argument_is_the_call_or_a_format_error_never_another_call(option: Any) -> None:
    """A model passing its own format's tags (the call's, the reasoning block's, the template's control
    tokens) as an argument's text: the call as written, or a format error, never a call with other
    arguments; in a JSON format the same text written with a JSON escape is the call itself."""
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir(option.family), option.family)
    hunt, parser = Hunt(option, chat), ToolCallActionParser(option.parsers(), TOOLS)
    fmt = FORMATS[option.tool_call_parser]
    family = FAMILIES[option.family]
    pieces = (hunt.think_open, hunt.think_close, fmt.call_open, fmt.call_close, *family.special_tokens)
    for piece in dict.fromkeys(piece for piece in pieces if piece):
        wanted = ToolCall("echo", {"text": f"a{piece}b"})
        text = hunt.reply(render_calls(option.tool_call_parser, [wanted]))
        action = parser.parse(text)
        if isinstance(action, ToolCallAction):
            assert [(c.name, c.arguments) for c in action.calls] == [(wanted.name, wanted.arguments)], piece
        else:
            assert isinstance(action, InvalidAction) and action.error.startswith("Invalid output format: ")
        written = json.dumps(wanted.arguments["text"], ensure_ascii=False)
        escaped = json.dumps(wanted.arguments["text"]).replace("<", "\\u003c").replace("[", "\\u005b")
        if text.count(written) == 1:  # a JSON format (GLM's tagged arguments are written raw)
            action = parser.parse(text.replace(written, escaped))
            assert isinstance(action, ToolCallAction), (piece, action)
            assert [(c.name, c.arguments) for c in action.calls] == [(wanted.name, wanted.arguments)]


# ------------------------------------------------------------------ a world's inline text and messages


class _InlineAndMessages(ToyEnv):
    """Answers each tool call with its result inline and a message beside it (a note to the user)."""

    async def step(self, action: Any) -> Transition:
        if isinstance(action, ToolCallAction):
            return Transition(inline="\n<result>3</result>\n", messages=[{"role": "user", "content": "NOTE"}])
        return await super().step(action)


def test_inline_text_and_messages_at_once_is_the_worlds_failure(qwen_chat: ChatFormat) -> None:
    """Before: the inline text went on in the model's turn and the messages were dropped, never shown
    to the model (the episode completed, 'NOTE' nowhere in its tokens or messages)."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _InlineAndMessages(("Add 1 and 2.",)), engine, RolloutConfig())
    assert result.status == "failed" and result.failure is not None and result.failure.kind == "env"
    assert "inline text or messages, not both" in result.failure.message
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)
    assert Transition(inline="x").inline == "x" and Transition(messages=[{"role": "user", "content": "y"}])


# ------------------------------------------------------------------ a row's metadata under generate's names


class _Reads(Factory):
    """Records the rows the hook hands the env factory."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []

    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        self.rows.append(row)
        return super().__call__(row, mode)


def _generate(monkeypatch: pytest.MonkeyPatch, chat: ChatFormat, sample: Sample) -> tuple[Sample, _Reads]:
    factory = _Reads()

    async def runner(args: Any, runtime: RuntimeConfig) -> EpisodeRunner:
        engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
        return EpisodeRunner(runtime, engine, env_factory=factory, chat=chat, reward=Progress())

    monkeypatch.setattr(hooks, "_runner", runner)
    monkeypatch.setattr(hooks, "_BUDGET", None)
    return asyncio.run(hooks.generate(slime_args(1.0), sample, {})), factory


@pytest.mark.parametrize("key", ["messages", "outcome", "t3rl_failure"])
def test_a_rows_metadata_under_a_name_generate_writes_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat, key: str
) -> None:
    """Before: generate took the row's metadata.messages (a dataset's own column) back as its own
    earlier output, so the world never read it, and wrote the episode's messages over it."""
    sample = toy_sample(0, group=0)
    sample.metadata[key] = "the row's"
    sample, factory = _generate(monkeypatch, qwen_chat, sample)
    failure = sample.metadata["t3rl_failure"]
    assert failure["error_type"] == "InvalidTask" and f"holds {key}:" in failure["message"], failure
    assert sample.remove_sample and factory.rows == []  # no world was built for it
    assert len(sample.tokens) - sample.response_length == len(sample.tokens) - len(sample.loss_mask) > 0


def test_a_sample_generate_filled_before_is_played_again(
    monkeypatch: pytest.MonkeyPatch, qwen_chat: ChatFormat
) -> None:
    """No false refusal: generate's own names in a sample it filled are taken back, the row read as given."""
    first, _ = _generate(monkeypatch, qwen_chat, toy_sample(0, group=0))
    assert "t3rl_failure" not in first.metadata and "messages" in first.metadata
    again, factory = _generate(monkeypatch, qwen_chat, first)
    assert "t3rl_failure" not in again.metadata and not again.remove_sample
    assert "messages" not in factory.rows[0]["metadata"] and "t3rl_metrics" not in factory.rows[0]["metadata"]


# ------------------------------------------------------------------ a world's Transition of another shape


class _Returns(ToyEnv):
    """Answers its first step with the Transition `make()` builds (in the step, as a world does)."""

    def __init__(self, make: Any) -> None:
        super().__init__(("Add 1 and 2.",))
        self.make = make

    async def step(self, action: Any) -> Transition:
        if not self.actions:
            self.actions.append(action)
            return self.make()
        return await super().step(action)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda: Transition(messages=None), "Transition.messages is a NoneType, not a list of messages"),
        (lambda: Transition(messages={"role": "tool", "content": "3"}), "is a dict, not a list of messages"),
        (lambda: Transition(messages="3"), "is a str, not a list of messages"),
        (lambda: Transition(truncated=True), "set done=True with it"),
    ],
    ids=["none", "one_message", "text", "truncated_not_done"],
)
def test_a_transition_of_another_shape_is_the_worlds_failure_saying_what(
    qwen_chat: ChatFormat, make: Any, said: str
) -> None:
    """Before: messages=None failed the episode as t3rl's own bug ('episode loop error: TypeError'), one
    message not in a list was 'a message that is a str' (its keys), and truncated=True without done
    (gymnasium's way to end an episode) was ignored: the loop went on playing the world."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _Returns(make), engine, RolloutConfig())
    assert result.status == "failed" and result.failure is not None and result.failure.kind == "env"
    assert said in result.failure.message and result.num_model_calls == 1, result.failure


def test_transitions_of_the_declared_shapes_are_played(qwen_chat: ChatFormat) -> None:
    """No false refusal: a tuple of messages, a limit with done, no messages at all."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    message = {"role": "tool", "content": "3"}
    result = play(qwen_chat, _Returns(lambda: Transition(messages=(message,))), engine, RolloutConfig())
    assert result.status == "completed" and result.failure is None, result.error
    ended = play(qwen_chat, _Returns(lambda: Transition(done=True, truncated=True)), engine, RolloutConfig())
    assert ended.status == "truncated" and ended.failure is None


# ------------------------------------------------------------------ a world's stop strings


class _Stops(Factory):
    """Builds the toy world with `stop` as its stop strings."""

    def __init__(self, stop: Any) -> None:
        super().__init__()
        self.stop = stop

    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        return ToyEnv(row["metadata"]["questions"], stop=self.stop)


def _run_with_stop(chat: ChatFormat, stop: Any) -> Any:
    runtime = RuntimeConfig.model_validate(slime_args().t3rl)
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    runner = EpisodeRunner(runtime, engine, env_factory=_Stops(stop), chat=chat, reward=Progress())
    return asyncio.run(runner.run(task(("Add 1 and 2.",))))[0]


@pytest.mark.parametrize(
    ("stop", "said"),
    [("</tool_call>", "write ('</tool_call>',)"), (("",), "non-empty stop strings"), ((3,), "not (3,)")],
)
def test_a_worlds_stop_strings_that_are_no_tuple_of_texts_are_its_failure(
    qwen_chat: ChatFormat, stop: Any, said: str
) -> None:
    """Before: `stop = "</tool_call>"` made each character a stop string; the reference engine's first
    call ended at its first '<' and the episode completed on that cut turn, unsaid ('' would stop
    every call at once)."""
    result = _run_with_stop(qwen_chat, stop)
    assert result.status == "failed" and result.failure is not None and result.failure.kind == "env"
    assert said in result.failure.message and result.num_model_calls == 0, result.failure


@pytest.mark.parametrize("stop", [(), ("</tool_call>",), ["</tool_call>"]])
def test_a_tuple_or_list_of_stop_strings_is_played(qwen_chat: ChatFormat, stop: Any) -> None:
    result = _run_with_stop(qwen_chat, stop)
    assert result.status == "completed" and result.failure is None, result.error


# ------------------------------------------------------------------ a world's message the delta leaves out


class _Says(ToyEnv):
    """Answers the first call with one message of `role`, then ends."""

    def __init__(self, role: str) -> None:
        super().__init__(("Add 1 and 2.",))
        self.role = role

    async def step(self, action: Any) -> Transition:
        self.actions.append(action)
        if len(self.actions) == 1:
            return Transition(messages=[{"role": self.role, "content": "HURRY-MARKER"}])
        return Transition(done=True)


@pytest.mark.parametrize("role", ["system", "user", "tool", "assistant", "developer", "ipython"])
def test_a_worlds_message_reaches_the_model_or_the_episode_says_so(chat: ChatFormat, role: str) -> None:
    """Before: DeepSeek-V3's template writes every system message in the prompt's head and GLM-4-0414's
    none after the model's turn: a world's system message mid-episode was in no turn delta, never
    reached the model, and the episode completed (only the drift check, when on, saw a difference)."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    result = play(chat, _Says(role), engine, RolloutConfig())
    if result.failure is None:
        assert "HURRY-MARKER" in chat.decode(result.response_ids), (role, result.status)
    else:
        assert result.failure.label == "env/UnrenderedRole" and f"'{role}' message" in result.failure.message
    if role == "system":  # the two templates that write no system message after the model's turn
        assert chat.family is not None
        assert (result.failure is not None) is (chat.family.name in ("deepseek_v3", "glm4_0414"))


# ------------------------------------------------------------------ a world's format problem of another type


class _Judges(ToyEnv):
    """The toy world under the format-repair protocol, whose format_problem answers `verdict`."""

    format_repair = FormatRepair(
        attempts=1, temperature=0.0, message="Fix your format.", keep_in_history=True, train_on_repaired=True
    )

    def __init__(self, verdict: Any) -> None:
        super().__init__(("Add 1 and 2.",))
        self.verdict = verdict

    def format_problem(self, action: Any) -> str | None:
        return self.verdict


@pytest.mark.parametrize("verdict", [False, "", 0, True])
def test_a_format_problem_that_is_no_text_or_none_is_the_worlds_failure(
    qwen_chat: ChatFormat, verdict: Any
) -> None:
    """Before: False (or '') meant as 'no problem' sent every correct turn through the format repair (a
    correction message after it, two repairs and four calls for a two-call episode), and True ended the
    episode as 'the format repair failed: True'."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _Judges(verdict), engine, RolloutConfig())
    assert result.failure is not None and result.failure.label == "env/InvalidFormatProblem", result.failure
    assert "return None when the action keeps the format" in result.failure.message
    assert result.format_repairs == 0 and result.num_model_calls == 1


def test_a_format_problem_of_none_plays_without_a_repair(qwen_chat: ChatFormat) -> None:
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _Judges(None), engine, RolloutConfig())
    assert result.status == "completed" and result.format_repairs == 0 and result.failure is None
