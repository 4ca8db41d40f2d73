"""Runtime kinds of round ten: what a plugin engine's answer may hold once the episode takes it (numpy
ids were written into records as text, an array of ids failed as t3rl's bug, a bool trained on token
1), converted or refused where the episode accepts it, at no cost per token for t3rl's own engines;
tool calls nested past any reader's recursion, refused with t3rl's limit named."""

from __future__ import annotations

import asyncio
import json
import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.eval.jsonl import record_line
from t3rl_core.parsers.nesting import MAX_NESTING, nesting_depth
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rewards.base import RewardInput, RewardResult
from t3rl_core.rollout.episode import EpisodeResult
from t3rl_core.types import InvalidAction, ToolCall, ToolCallAction, Transition
from tests.rollout.fakes import TOOLS, ScriptedEngine, ToyEnv, play, task
from tests.rollout.test_runner import ToyFactory, TurnsReward, toy_runner

# --- A plugin engine's numbers ------------------------------------------------------------------------


class _Answers(Engine):
    """A plugin engine answering `make(ids, log_probs)` for each of the toy task's two answers."""

    def __init__(self, chat: ChatFormat, make: Any) -> None:
        self.ids = [*chat.encode("The sum is 3."), chat.stop_token_ids[0]]
        self.make = make

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        return self.make(list(self.ids), [-0.25] * len(self.ids))


def _played(chat: ChatFormat, make: Any) -> EpisodeResult:
    return play(chat, ToyEnv(), _Answers(chat, make), RolloutConfig(max_response_len=64))


def _as_written(result: EpisodeResult) -> dict[str, Any]:
    """The record's token lists as the eval writes them and reads them back."""
    lists = ("prompt_ids", "response_ids", "loss_mask", "log_probs")
    return json.loads(record_line({key: getattr(result, key) for key in lists}))


_CONVERTED = {
    "numpy-int64": lambda ids, lps: Generation([np.int64(t) for t in ids], lps, "stop"),
    "numpy-int32-float32": lambda ids, lps: Generation(
        [np.int32(t) for t in ids], [np.float32(lp) for lp in lps], "stop"
    ),
    "numpy-arrays": lambda ids, lps: Generation(np.array(ids), np.array(lps), "stop"),
    "tuples": lambda ids, lps: Generation(tuple(ids), tuple(lps), "stop"),
    "int-and-fraction-log-probs": lambda ids, lps: Generation(
        ids, [Fraction(-1, 4)] * (len(ids) - 1) + [0], "stop"
    ),
    "numpy-meta": lambda ids, lps: Generation(
        ids, lps, "stop", meta={"prompt_tokens": np.int64(40), "cached_tokens": np.uint16(8), "x": 1}
    ),
    "str-subclass-finish": lambda ids, lps: Generation(ids, lps, type("Reason", (str,), {})("stop")),
}


@pytest.mark.parametrize("make", list(_CONVERTED.values()), ids=list(_CONVERTED))
def test_what_stands_for_the_declared_types_is_converted(qwen_chat: ChatFormat, make: Any) -> None:
    """numpy ids were written into the eval's records as strings ("315"), an array of ids failed the
    episode as t3rl's own bug (its truth value is ambiguous); now they are the ints and floats
    Generation declares, wherever the episode's lists go."""
    result = _played(qwen_chat, make)
    assert result.failure is None and result.status == "completed", result.error
    for values, kind in ((result.response_ids, int), (result.log_probs, float), (result.loss_mask, int)):
        assert {type(value) for value in values} == {kind}
    written = _as_written(result)
    assert written["response_ids"] == result.response_ids and written["log_probs"] == result.log_probs
    assert all(type(meta.get("prompt_tokens", 0)) is int for meta in result.call_meta)
    assert all(set(meta) <= {"prompt_tokens", "cached_tokens"} for meta in result.call_meta)


_REFUSED = {
    "bool-ids": (lambda ids, lps: Generation([True] * len(ids), lps, "stop"), "no integer"),
    "float-ids": (lambda ids, lps: Generation([float(t) for t in ids], lps, "stop"), "no integer"),
    "text-ids": (lambda ids, lps: Generation([str(t) for t in ids], lps, "stop"), "no integer"),
    "numpy-bool-ids": (lambda ids, lps: Generation(np.array(ids) > 0, lps, "stop"), "no integer"),
    "text-of-ids": (lambda ids, lps: Generation("abc", [-0.1] * 3, "stop"), "not a sequence"),
    "bool-log-probs": (lambda ids, lps: Generation(ids, [False] * len(ids), "stop"), "no real number"),
    "text-log-probs": (lambda ids, lps: Generation(ids, ["-0.2"] * len(ids), "stop"), "no real number"),
    "unknown-finish": (lambda ids, lps: Generation(ids, lps, "eos"), "finish_reason 'eos'"),  # type: ignore[arg-type]
    "error-object": (lambda ids, lps: Generation([], [], "abort", error=RuntimeError("x")), "error is"),  # type: ignore[arg-type]
    "flag-int": (lambda ids, lps: Generation(ids, lps, "stop", on_request=1), "on_request"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize(("make", "said"), list(_REFUSED.values()), ids=list(_REFUSED))
def test_what_is_none_of_the_declared_types_is_the_engines_failure(
    qwen_chat: ChatFormat, make: Any, said: str
) -> None:
    """A bool id trained on token 1, a bool log-prob on probability 1; a text log-prob raised
    TypeError out of the loop (t3rl's bug); an unknown finish reason read as an abort nobody made."""
    result = _played(qwen_chat, make)
    assert result.status == "aborted" and result.failure is not None, result.error
    assert (result.failure.kind, result.failure.error_type) == ("engine", "BadGeneration")
    assert said in (result.error or "") and sum(result.loss_mask) == 0


_INTEGRAL = st.sampled_from([int, np.int64, np.int32, np.uint32, np.int16])
_REAL = st.sampled_from([float, np.float64, np.float32, np.float16, int])


@settings(max_examples=60, deadline=None)
@given(
    id_type=_INTEGRAL,
    lp_type=_REAL,
    container=st.sampled_from([list, tuple]),
    junk=st.one_of(st.none(), st.sampled_from([True, 2.0, "7", None, b"7", np.bool_(True), np.float64(3)])),
    at=st.integers(0, 8),
)
def test_every_answer_is_plain_or_the_engines_failure(
    qwen_chat: ChatFormat, id_type: Any, lp_type: Any, container: Any, junk: Any, at: int
) -> None:
    """Whatever numbers a plugin engine answers with, the episode's lists hold ints and floats only
    (what records and slime read back as written), or the episode is the engine's failure."""

    def make(ids: list[int], lps: list[float]) -> Generation:
        tokens: list[Any] = [id_type(t) for t in ids]
        log_probs = [lp_type(-1) if lp_type is int else lp_type(lp) for lp in lps]
        if junk is not None:
            tokens[at % len(tokens)] = junk
        return Generation(container(tokens), container(log_probs), "stop")

    result = _played(qwen_chat, make)
    if result.failure is not None:
        assert result.failure.error_type == "BadGeneration" and junk is not None
        return
    assert junk is None
    assert {type(t) for t in result.response_ids} == {int}
    assert {type(lp) for lp in result.log_probs} == {float} and all(map(math.isfinite, result.log_probs))
    assert _as_written(result)["response_ids"] == result.response_ids


def test_an_engine_declares_its_answers_plain_only_for_its_own_generate(qwen_chat: ChatFormat) -> None:
    """t3rl's engines are taken as they answer (no check per token on the hot path); a plugin that
    subclasses one with its own generate is checked, and the eval's slot wrapper passes on what it
    wraps."""
    from t3rl_core.engines.hf import HFEngine
    from t3rl_core.engines.reference import ReferenceEngine
    from t3rl_core.engines.sglang_http import SGLangEngine
    from t3rl_core.eval.slots import Slots, SlottedEngine

    assert SGLangEngine.answers_plain and HFEngine.answers_plain and ReferenceEngine.answers_plain
    assert not Engine.answers_plain and not _Answers.answers_plain

    class NumpySGLang(SGLangEngine):
        async def generate(
            self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
        ) -> Generation:
            ids = [*qwen_chat.encode("The sum is 3."), qwen_chat.stop_token_ids[0]]
            return Generation([np.int64(t) for t in ids], [-0.1] * len(ids), "stop")

    assert not NumpySGLang.answers_plain
    engine = NumpySGLang.__new__(NumpySGLang)  # no server: only its generate is called
    result = play(qwen_chat, ToyEnv(), engine, RolloutConfig(max_response_len=64))
    assert result.failure is None and {type(t) for t in result.response_ids} == {int}
    slots = Slots(2, 0)
    assert SlottedEngine(ReferenceEngine.__new__(ReferenceEngine), slots).answers_plain
    assert not SlottedEngine(engine, slots).answers_plain
    wrapped = play(qwen_chat, ToyEnv(), SlottedEngine(engine, slots), RolloutConfig(max_response_len=64))
    assert wrapped.failure is None and {type(t) for t in wrapped.response_ids} == {int}


# --- Arguments nested past any reader's recursion ----------------------------------------------------------


def _call_text(parser: str, value: str) -> str:
    """A call of `echo` in `parser`'s format whose argument is the raw JSON `value`."""
    if parser == "pythonic":
        return f"[echo(text={value})]"
    rendered = render_calls(parser, [ToolCall("echo", {"text": "PLACEHOLDER"})])
    return rendered.replace('"PLACEHOLDER"', value).replace("PLACEHOLDER", value)


_PARSERS = [*sorted(FORMATS), "pythonic"]


@pytest.mark.parametrize("parser", _PARSERS)
@pytest.mark.parametrize("levels", [MAX_NESTING + 1, 10_000])
def test_arguments_nested_past_the_limit_are_refused_naming_it(parser: str, levels: int) -> None:
    """10,000 nested lists were answered with Python's RecursionError text ('maximum recursion depth
    exceeded while decoding a JSON array'), in every format SGLang's detectors or t3rl read as JSON."""
    action = ToolCallActionParser(ParsersConfig(tool_call_parser=parser), TOOLS).parse(
        _call_text(parser, "[" * levels + "]" * levels)
    )
    assert isinstance(action, InvalidAction)
    assert f"at most {MAX_NESTING} levels" in action.error and "MAX_NESTING" in action.error
    assert "Recursion" not in action.error


@pytest.mark.parametrize("parser", _PARSERS)
def test_arguments_nested_within_the_limit_are_read(parser: str) -> None:
    levels = MAX_NESTING - 3  # the call's own object (and mistral's list) around it
    value = "[" * levels + '"x"' + "]" * levels
    action = ToolCallActionParser(ParsersConfig(tool_call_parser=parser), TOOLS).parse(
        _call_text(parser, value)
    )
    assert isinstance(action, ToolCallAction), getattr(action, "error", "")


def test_a_refused_nesting_leaves_the_process_as_it_was(qwen_chat: ChatFormat) -> None:
    """The parser, the recursion limit and the episode go on: the refusal is the model's turn, shown
    to it in t3rl's words, and the next turn's call is read and run."""
    limit = sys.getrecursionlimit()
    deep = _call_text("qwen25", "[" * 10_000 + "]" * 10_000)
    good = _call_text("qwen25", "[[1], [2]]")
    turns = [deep, good, "The sum is 3.", "The sum is 7."]
    engine = ScriptedEngine(qwen_chat, turns, calls_tools=lambda text: "<tool_call>" in text)
    result = play(
        qwen_chat, ToyEnv(), engine, RolloutConfig(max_num_steps=8), SamplingParams(max_new_tokens=10**6)
    )
    assert result.failure is None and result.status == "completed", result.error
    assert sys.getrecursionlimit() == limit
    shown = [m["content"] for m in result.messages if m["role"] == "user" and "nested" in m["content"]]
    assert len(shown) == 1 and f"at most {MAX_NESTING} levels" in shown[0] and "Recursion" not in shown[0]
    assert any(m["role"] == "tool" and m["content"] == "[[1], [2]]" for m in result.messages)


_OPENERS = st.sampled_from(["[", "{", "(", '"[[[["', "x"])
_CLOSERS = st.sampled_from(["]", "}", ")", '"]]]"', " "])


@settings(max_examples=80, deadline=None)
@given(
    before=st.lists(_CLOSERS, max_size=200).map("".join),
    levels=st.integers(0, 3_000),
    noise=st.lists(st.one_of(_OPENERS, _CLOSERS), max_size=30).map("".join),
    parser=st.sampled_from(_PARSERS),
)
def test_no_nesting_reaches_a_reader_past_the_limit(
    before: str, levels: int, noise: str, parser: str
) -> None:
    """Whatever precedes a call (closers that would hide its depth from a plain count, brackets inside
    JSON strings), no parse answers Python's RecursionError, and a call nested past the limit is
    never read as one."""
    value = "[" * levels + "1" + "]" * levels
    text = before + noise + _call_text(parser, value)
    action = ToolCallActionParser(ParsersConfig(tool_call_parser=parser), TOOLS).parse(text)
    error = getattr(action, "error", "")
    assert "Recursion" not in error and "recursion" not in error
    if levels > MAX_NESTING:
        assert isinstance(action, InvalidAction)
    assert nesting_depth(text) >= levels


# --- A CancelledError that cancelled nothing ---------------------------------------------------------------


class _Raises(ToyEnv):
    """The toy world raising `exc` in `where` (reset, step, outcome, finish, aclose)."""

    def __init__(self, questions: Any, where: str, exc: BaseException) -> None:
        super().__init__(questions)
        self.where, self.exc = where, exc

    def _maybe(self, where: str) -> None:
        if self.where == where:
            raise self.exc

    async def reset(self) -> Transition:
        self._maybe("reset")
        return await super().reset()

    async def step(self, action: Any) -> Transition:
        self._maybe("step")
        return await super().step(action)

    async def finish(self) -> None:
        self._maybe("finish")

    def outcome(self) -> dict[str, Any]:
        self._maybe("outcome")
        return super().outcome()

    async def aclose(self) -> None:
        await super().aclose()
        self._maybe("aclose")


class _RaisingFactory(ToyFactory):
    def __init__(self, where: str, exc: BaseException) -> None:
        super().__init__()
        self.where, self.exc = where, exc

    def __call__(self, row: Any, mode: Any) -> ToyEnv:
        if self.where == "factory":
            raise self.exc
        self.envs.append(_Raises(row["metadata"]["questions"], self.where, self.exc))
        return self.envs[-1]


class _RaisingReward(TurnsReward):
    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc

    def __call__(self, inp: RewardInput) -> RewardResult:
        raise self.exc


class _RaisingEngine(ReferenceEngine):
    def __init__(self, chat: ChatFormat, exc: BaseException) -> None:
        super().__init__(ReferenceEngineConfig(), chat=chat)
        self.exc = exc

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        raise self.exc


_WHERE = {  # where the component raises: the failure's kind and the status it leaves
    "engine": ("engine", "aborted"),
    "reset": ("env", "failed"),
    "step": ("env", "failed"),
    "finish": ("env", "failed"),
    "outcome": ("env", "failed"),
    "factory": ("env", "failed"),
    "reward": ("reward", None),
    "aclose": (None, "completed"),  # logged: releasing the world is never the episode's failure
}


def _runner(chat: ChatFormat, where: str, exc: BaseException) -> Any:
    runner = toy_runner(
        chat,
        factory=_RaisingFactory(where, exc),
        reward=_RaisingReward(exc) if where == "reward" else None,
    )
    if where == "engine":
        runner.engine = _RaisingEngine(chat, exc)
    return runner


@pytest.mark.parametrize("where", list(_WHERE))
def test_a_cancelled_error_a_component_raises_is_its_failure(qwen_chat: ChatFormat, where: str) -> None:
    """A client library's own cancellation leaking out of a call (aiohttp's, a websocket's) raised
    CancelledError out of the episode while nothing cancelled it: asyncio read it as the task's
    cancellation, the eval dropped the episode without a record while its summary said complete
    (3 of 4 tasks scored, accuracy over 3), and slime's gather lost the sample."""
    kind, status = _WHERE[where]
    runner = _runner(qwen_chat, where, asyncio.CancelledError())
    result, reward = asyncio.run(runner.run(task(), "eval"))
    if kind is None:
        assert result.failure is None and result.status == status
        return
    assert result.failure is not None and (result.failure.kind, result.failure.error_type) == (
        kind,
        "CancelledError",
    )
    assert status is None or result.status == status
    assert "nothing cancelled the episode" in (result.error or "")
    assert reward.value == 0.0


@pytest.mark.parametrize("where", ["engine", "step", "reward"])
def test_a_cancellation_of_the_episode_still_cancels_it(qwen_chat: ChatFormat, where: str) -> None:
    """The task itself cancelled (Ctrl-C in an eval, a task slime drops) goes on up as before, whatever
    component was running."""
    started = asyncio.Event()

    class Waits(BaseException):  # never raised: the component waits until its task is cancelled
        pass

    async def cancelled() -> None:
        runner = _runner(qwen_chat, where, Waits())
        gate = asyncio.Event()

        async def wait(*args: Any, **kwargs: Any) -> Any:
            started.set()
            await gate.wait()

        if where == "engine":
            runner.engine.generate = wait
        elif where == "reward":

            class Waiting(TurnsReward):
                async def score_async(self, inp: RewardInput) -> RewardResult:
                    return await wait()

            runner.reward = Waiting()
        else:
            runner.env_factory = ToyFactory()
            original = runner.env_factory.__call__

            def factory(row: Any, mode: Any) -> ToyEnv:
                env = original(row, mode)
                env.step = wait  # type: ignore[method-assign]
                return env

            runner.env_factory = factory  # type: ignore[assignment]
        episode = asyncio.ensure_future(runner.run(task(), "eval"))
        await asyncio.wait([episode, asyncio.ensure_future(started.wait())], return_when="FIRST_COMPLETED")
        assert started.is_set(), f"the {where} never ran: {episode.result()}"
        episode.cancel()
        with pytest.raises(asyncio.CancelledError):
            await episode

    asyncio.run(cancelled())


@pytest.mark.parametrize("exc", [KeyboardInterrupt(), SystemExit(3)], ids=["KeyboardInterrupt", "SystemExit"])
def test_the_process_s_own_exits_go_on_up(qwen_chat: ChatFormat, exc: BaseException) -> None:
    """Ctrl-C and an exit are the process's: no component's failure, never swallowed."""
    runner = _runner(qwen_chat, "engine", exc)
    with pytest.raises(type(exc)):
        asyncio.run(runner.run(task(), "eval"))
