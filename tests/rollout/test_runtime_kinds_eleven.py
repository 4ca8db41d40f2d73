"""Runtime kinds of round eleven: a reward is a real number, never a bool, refused naming the reward
that gave it; a BaseException of a plugin's own is that component's failure, not the process's stop;
a world's result (a tool's, an observation's) nested past any reader's recursion is answered with
t3rl's limit named, and a world's message holds text."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RolloutConfig
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.eval.jsonl import record_line
from t3rl_core.parsers.nesting import MAX_NESTING, result_nesting_problem, structure_depth
from t3rl_core.rewards.base import (
    REWARD_LIMIT,
    InvalidReward,
    RewardInput,
    RewardResult,
    checked,
    within_bounds,
)
from t3rl_core.rollout.failures import components_failure
from t3rl_core.types import ToolCallAction, Transition
from tests.rollout.fakes import TOOLS, ScriptedEngine, ToyEnv, play, task
from tests.rollout.test_runner import toy_runner
from tests.rollout.test_runtime_kinds_ten import _WHERE, _runner

# --- A reward is a real number --------------------------------------------------------------------------


def plugin_reward(value: Any) -> Any:
    """A plugin's reward function as a plain callable, returning `value` as its reward."""

    def shaped(inp: RewardInput) -> RewardResult:
        return RewardResult(value)

    return shaped


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_reward_is_the_rewards_failure_naming_it(qwen_chat: ChatFormat, value: bool) -> None:
    """`RewardResult(True)` (a check returned where its score was meant) was read as 1.0 and trained
    on without a word. A reward is declared a real number: a bool is the reward's failure, named by
    the plugin's import path, at the one place a reward's result is accepted (`within_bounds`, which
    the runner and slime's reward hook both call)."""
    runner = toy_runner(qwen_chat, reward=plugin_reward(value))
    result, score = asyncio.run(runner.run(task(), "eval"))
    assert result.failure is not None and result.failure.label == "reward/InvalidReward"
    assert "plugin_reward.<locals>.shaped" in result.failure.message
    assert "bool" in result.failure.message and "real number" in result.failure.message
    assert score.value == 0.0


def test_a_bool_metric_is_still_a_share() -> None:
    """A metric is averaged over the batch: a bool one is the share of episodes it holds for."""
    assert checked(RewardResult(0.5, {"solved": True})).metrics == {"solved": 1.0}


_VALUES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),
    st.sampled_from([np.bool_(True), np.float32(0.5), np.int64(3), np.float64(math.nan), None, "1", [1.0]]),
)


@settings(max_examples=200, deadline=None)
@given(value=_VALUES)
def test_a_reward_is_accepted_exactly_when_it_is_a_finite_real_number_and_no_bool(value: Any) -> None:
    def real(value: Any) -> bool:
        numeric = isinstance(value, int | float | np.integer | np.floating)
        if isinstance(value, bool | np.bool_) or not numeric:
            return False
        try:
            return math.isfinite(value) and abs(value) <= REWARD_LIMIT  # what float32 trains on
        except OverflowError:
            return False

    try:
        result = within_bounds(plugin_reward(value), RewardInput(outcome={}), RewardResult(value))
    except InvalidReward as exc:
        assert not real(value)
        assert "plugin_reward.<locals>.shaped" in str(exc)
    else:
        assert real(value) and type(result.value) is float


def test_a_refused_rewards_message_survives_a_value_nested_past_any_repr() -> None:
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(InvalidReward, match="nested too deep to print"):
        checked(RewardResult(deep))


# --- A plugin's own BaseException ------------------------------------------------------------------------


class _PluginStop(BaseException):
    """What a plugin may raise that is no Exception: its own control flow, a test framework's outcome."""


@pytest.mark.parametrize("where", list(_WHERE))
def test_a_plugins_own_base_exception_is_its_components_failure(qwen_chat: ChatFormat, where: str) -> None:
    """A BaseException of a plugin's own class went on up out of the episode: it ended the whole eval
    (every other episode in flight with it) or slime's rollout batch, as only Ctrl-C should. It is the
    component's failure, recorded like any Exception of it."""
    kind, status = _WHERE[where]
    runner = _runner(qwen_chat, where, _PluginStop("stop here"))
    result, reward = asyncio.run(runner.run(task(), "eval"))
    if kind is None:
        assert result.failure is None and result.status == status
        return
    assert result.failure is not None and (result.failure.kind, result.failure.error_type) == (
        kind,
        "_PluginStop",
    )
    assert status is None or result.status == status
    assert reward.value == 0.0


_PROCESS = [KeyboardInterrupt(), SystemExit(2), GeneratorExit()]


@pytest.mark.parametrize(
    "exc",
    [*_PROCESS, BaseExceptionGroup("with Ctrl-C", [_PluginStop(), KeyboardInterrupt()])],
    ids=["KeyboardInterrupt", "SystemExit", "GeneratorExit", "group-holding-ctrl-c"],
)
def test_the_process_s_own_stops_go_on_up_from_a_reward(qwen_chat: ChatFormat, exc: BaseException) -> None:
    runner = _runner(qwen_chat, "reward", exc)
    with pytest.raises(type(exc)):
        asyncio.run(runner.run(task(), "eval"))


@given(
    st.recursive(
        st.sampled_from([ValueError("x"), _PluginStop(), *_PROCESS]),
        lambda inner: st.lists(inner, min_size=1, max_size=3).map(lambda e: BaseExceptionGroup("g", e)),
        max_leaves=6,
    )
)
def test_a_component_fails_exactly_when_nothing_in_it_stops_the_process(exc: BaseException) -> None:
    def leaves(exc: BaseException) -> list[BaseException]:
        if isinstance(exc, BaseExceptionGroup):
            return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
        return [exc]

    stops = (KeyboardInterrupt, SystemExit, GeneratorExit)
    assert components_failure(exc) == (not any(isinstance(leaf, stops) for leaf in leaves(exc)))


# --- A world's result nested past any reader's recursion; a world's message is text ------------------------


def _nested(levels: int, leaf: Any = 1, mapping: bool = False) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value} if mapping else [value]
    return value


class _Answers(ToyEnv):
    """The toy world answering each tool call with the message `answer` (or `inline` text)."""

    def __init__(self, answer: Any = None, inline: Any = None) -> None:
        super().__init__()
        self.answer, self.inline = answer, inline

    async def step(self, action: Any) -> Transition:
        if isinstance(action, ToolCallAction):
            self.called = True
            if self.inline is not None:
                return Transition(inline=self.inline)
            return Transition(messages=[self.answer])
        return await super().step(action)


_NOT_TEXT = {
    "content-nested-list": {"role": "tool", "content": _nested(10_000)},
    "content-nested-dict": {"role": "tool", "content": _nested(10_000, mapping=True)},
    "content-dict": {"role": "tool", "content": {"sum": 3}},
    "content-none": {"role": "tool", "content": None},
    "content-int": {"role": "tool", "content": 3},
    "role-none": {"role": None, "content": "3"},
    "not-a-mapping": ["tool", "3"],
}


@pytest.mark.parametrize("answer", list(_NOT_TEXT.values()), ids=list(_NOT_TEXT))
def test_a_worlds_message_that_is_not_text_is_the_worlds_failure(chat: ChatFormat, answer: Any) -> None:
    """A tool's result handed over as a structure: qwen3's template raised TypeError (failed as t3rl's
    own bug), glm4's wrote nothing of it (the model never saw the result, unsaid), and a structure
    10,000 levels deep stopped the eval's record writer at Python's recursion limit."""
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    result = play(chat, _Answers(answer), engine, RolloutConfig(max_response_len=256, tito_drift_check=True))
    assert result.status == "failed" and result.failure is not None
    assert result.failure.label == "env/InvalidMessage", result.failure
    assert "_Answers" in result.failure.message and "json.dumps" in result.failure.message
    assert record_line({"messages": result.messages})  # what is kept is writable


def test_inline_text_that_is_not_text_is_the_worlds_failure(qwen_chat: ChatFormat) -> None:
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _Answers(inline=_nested(10_000)), engine, RolloutConfig(max_response_len=256))
    assert result.failure is not None and result.failure.label == "env/InvalidMessage"


def test_a_worlds_text_result_goes_on_as_before(qwen_chat: ChatFormat) -> None:
    """A deeply bracketed result written as text is text: the episode goes on, the model reads it."""
    text = "[" * 10_000 + "]" * 10_000
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    result = play(qwen_chat, _Answers({"role": "tool", "content": text}), engine, RolloutConfig())
    assert result.failure is None and any(m.get("content") == text for m in result.messages)


def _depth(value: Any) -> int:
    """The oracle: the nesting of a small structure, counted recursively."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list | tuple | set | frozenset):
        return 1 + max(map(_depth, value), default=0)
    return 0


_STRUCTURES = st.recursive(
    st.one_of(st.integers(), st.text(max_size=3), st.none()),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=2), inner, max_size=3),
        st.frozensets(st.integers(), max_size=2),
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(value=_STRUCTURES, extra=st.integers(min_value=0, max_value=3 * MAX_NESTING))
def test_a_structure_s_depth_is_measured_without_recursion_up_to_the_limit(value: Any, extra: int) -> None:
    value = _nested(extra, value, mapping=extra % 2 == 1)
    expected = _depth(value)
    assert structure_depth(value) == min(expected, MAX_NESTING + 1)
    assert (result_nesting_problem(value) is None) == (expected <= MAX_NESTING)


@pytest.mark.parametrize("levels", [MAX_NESTING + 1, 10_000])
@pytest.mark.parametrize("mapping", [False, True], ids=["list", "dict"])
def test_a_bfcl_result_nested_past_the_limit_is_its_error_naming_it(levels: int, mapping: bool) -> None:
    """bfcl-eval's conversion (json, then str()) stopped at Python's recursion limit: the model read
    'maximum recursion depth exceeded while getting the repr of an object'. It is the call's error
    with t3rl's limit named; within the limit the result is written as before."""
    world = pytest.importorskip("t3rl_core.envs.bfcl.world")
    deep = _nested(levels, mapping=mapping)
    text = world._call_text(lambda: deep, {})
    assert text.startswith(world.ERROR_PREFIX) and f"at most {MAX_NESTING} levels" in text
    assert "recursion" not in text
    within = _nested(MAX_NESTING, mapping=True)
    assert world.result_text(within) == json.dumps(within)


def test_a_tau2_tool_s_result_nested_past_recursion_is_a_tool_error_naming_the_limit() -> None:
    """tau2 writes a result as JSON after the call and outside its own error handling: the
    RecursionError failed the episode as the world's, the model's call never answered."""
    calls = pytest.importorskip("t3rl_core.envs.tau2.generic_calls")
    from tau2.data_model.message import ToolCall as Tau2ToolCall
    from tau2.environment.environment import Environment

    class Deep:
        tools = user_tools = None

        def get_response(self, request: Any) -> Any:
            return Environment.to_json_str(_nested(10_000, mapping=True))

    request = Tau2ToolCall(id="call_1", name="deep", arguments={}, requestor="assistant")
    message = asyncio.run(calls.response(Deep(), request, None, None))  # type: ignore[arg-type]
    assert message.error and f"at most {MAX_NESTING} levels" in message.content
    assert (message.id, message.requestor) == ("call_1", "assistant")


def test_an_openenv_observation_nested_past_the_limit_is_the_environments_failure() -> None:
    env = pytest.importorskip("t3rl_core.envs.openenv.env")
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    with pytest.raises(OpenEnvProtocolError, match=f"at most {MAX_NESTING} levels"):
        env.observation_text({"board": _nested(10_000), "done": False})
    assert env.observation_text({"board": _nested(3), "x": 1}) == '{"board": [[[1]]], "x": 1}'


# --- GLM's drift check after a malformed tool-call turn ----------------------------------------------

_MALFORMED = st.sampled_from(
    [
        'add\n{"a": 1, "b',  # cut JSON
        'add\n{a: 1, "b": 2}',  # keys unquoted
        'add\n{{"a": 1, "b": 2}',
        'add\n{"a": 1, "b": 2} trailing',
        "add(1,2)",  # another family's call
        'add{"a": 1, "b": 2}',  # no newline after the name
        'ad d\n{"a": 1, "b": 2}',  # no offered tool
    ]
)


def _glm_episode(glm: ChatFormat, texts: list[str]) -> Any:
    engine = ScriptedEngine(glm, texts)  # a call turn as GLM writes one: no newline, ended by <|observation|>
    return play(glm, ToyEnv(), engine, RolloutConfig(max_response_len=1024, tito_drift_check=True))


@pytest.fixture(scope="module")
def glm() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("glm4_0414"), "glm4_0414")


@settings(max_examples=25, deadline=None)
@given(first=_MALFORMED, second=_MALFORMED)
def test_a_malformed_glm_call_turn_is_no_drift(glm: ChatFormat, first: str, second: str) -> None:
    """The kept tokens are the model's, as sampled: a GLM model ends a turn meant as a call with
    <|observation|>, and writes no newline after <|assistant|> before it. When the call does not parse,
    the next message is the world's correction (role user), whose render does not begin with
    <|observation|>, and the template writes the newline it writes before any text but an offered
    tool's call: the drift check flagged every such episode (at the malformed turn's first token)."""
    result = _glm_episode(glm, [first, "The sum is 3.", second, "The sum is 7."])
    assert isinstance(result.drift_at, type(None)), (result.drift_at, result.messages)
    assert result.status == "completed"


def _replaced(ids: list[int], at: int, vocabulary: int, avoid: set[int]) -> list[int]:
    new = next(t for t in range(vocabulary - 1, 0, -1) if t not in avoid)
    return [*ids[:at], new, *ids[at + 1 :]]


@settings(max_examples=40, deadline=None)
@given(where=st.floats(min_value=0, max_value=1, exclude_max=True), insert=st.booleans())
def test_real_drift_after_a_malformed_glm_turn_is_still_flagged_where_it_is(
    glm: ChatFormat, where: float, insert: bool
) -> None:
    """Any token the render does not have (replaced, or a stop token inserted where no model call
    ends) is flagged at its index, before, at and after the malformed turn."""
    result = _glm_episode(glm, ['add\n{a: 1, "b": 2}', "The sum is 3.", "The sum is 7."])
    tokens = result.tokens
    spans = [(len(result.prompt_ids) + a, len(result.prompt_ids) + b) for a, b in _model_spans(result)]
    assert glm.tito_drift(tokens, result.messages, TOOLS, model_spans=spans) is None
    at = int(where * len(tokens))
    if insert:
        stop = glm.stop_token_ids[0]
        ends = {end for _, end in spans}
        if at in ends:  # right after a model call's last token: the model's own place, not drift
            at -= 1
        drifted = [*tokens[:at], stop, *tokens[at:]]
        if tokens[at - 1 : at] == [stop] or tokens[at : at + 1] == [stop]:
            return  # beside a stop token already: the same tokens either way
    else:
        drifted = _replaced(tokens, at, glm.token_id_limit or 150_000, set(tokens))
    found = glm.tito_drift(drifted, result.messages, TOOLS, model_spans=spans)
    assert found is not None and found <= at + 1, (found, at)
    assert found >= at - 1


def _model_spans(result: Any) -> list[tuple[int, int]]:
    """Each model call's [start, end) in the response, from the loss mask and the step starts."""
    spans, start = [], None
    for i, mask in enumerate([*result.loss_mask, 0]):
        if mask and start is None:
            start = i
        elif not mask and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_real_drift_the_loop_inserts_is_still_flagged(
    glm: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop inserting a token the render lacks after a malformed turn (a stop token where the model
    wrote none) is drift, found by the episode's own check."""
    real = glm.turn_end_ids_async

    async def with_an_extra_stop(*args: Any, **kwargs: Any) -> list[int]:
        return [glm.stop_token_ids[0], *(await real(*args, **kwargs))]

    monkeypatch.setattr(glm, "turn_end_ids_async", with_an_extra_stop)
    result = _glm_episode(glm, ['add\n{a: 1, "b": 2}', "The sum is 3.", "The sum is 7."])
    assert result.drift_at is not None
