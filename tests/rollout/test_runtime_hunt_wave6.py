"""Runtime hunt, wave six: the world side of the stop contract, engine answers of odd shapes, and what
else wave five left (docs/explanation/tito.md, "Hunted, wave six")."""

from __future__ import annotations

import asyncio
import copy
import enum
import json
import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import Generation, SamplingParams
from t3rl_core.engines.sglang_http import BadResponse, parse_generation
from t3rl_core.eval import runner as eval_runner
from t3rl_core.parsers.render import FORMATS, call_format, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser, UnwritableTool
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.types import InvalidAction, ToolCall, ToolCallAction, Transition
from tests.rollout.fakes import TOOLS, FixedEngine, ScriptedEngine, ToyEnv, family_parser, play, task
from tests.rollout.test_runner import ToyFactory, toy_runner


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


# ------------------------------------------------------------ a world's outcome that is no JSON data


class _Reports(ToyEnv):
    """The toy world, its outcome holding `extra` too."""

    def __init__(self, extra: dict[Any, Any]) -> None:
        super().__init__(("Add 1 and 2.",))
        self.extra = extra

    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), **self.extra}


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({("a", "b"): 1}, "a key of type tuple"),
        ({1: "x"}, "a key of type int"),
        ({"seen": {1, 2}}, "outcome['seen'] is of type set"),
        ({"raw": b"xy"}, "outcome['raw'] is of type bytes"),
        ({"deep": {"x": [object()]}}, "outcome['deep']['x'][0] is of type object"),
        ({"rate": math.nan}, "outcome['rate'] is nan, which JSON cannot hold"),
    ],
    ids=["tuple-key", "int-key", "set", "bytes", "nested-object", "nan"],
)
def test_an_outcome_that_is_no_json_data_is_the_worlds_failure(
    qwen_chat: ChatFormat, extra: dict[Any, Any], said: str
) -> None:
    """`Env.outcome()` declares JSON data. Before: a tuple key raised TypeError out of the eval's record
    writer; a set, bytes or an object were written as their str ("{1, 2}"), an int key came back as
    text and NaN was written as `NaN`, no JSON; all without a word. Now the world's failure naming the
    entry, the entry left out (so the record is written), the rest of the outcome kept."""
    result = play(
        qwen_chat, _Reports(extra), ScriptedEngine(qwen_chat, [_call(qwen_chat), "3."]), RolloutConfig()
    )
    assert result.status == "failed" and result.failure is not None
    assert result.failure.label == "env/InvalidOutcome"
    assert said in (result.error or "") and "_Reports.outcome() is no JSON data" in (result.error or "")
    assert result.outcome == {"turns_answered": 1, "turns": 1}
    json.loads(json.dumps(result.outcome, allow_nan=False))


def test_numpy_scalars_and_tuples_in_an_outcome_are_the_json_they_stand_for(qwen_chat: ChatFormat) -> None:
    """The opposite: what stands for a JSON value is converted, not refused (a numpy count was written
    as the text "3"; an IntEnum or StrEnum member is its value, as json writes it)."""

    class Level(enum.IntEnum):
        HIGH = 2

    class Mode(enum.StrEnum):
        FAST = "fast"

    extra = {"n": np.int64(3), "share": np.float32(0.5), "ok": np.bool_(True), "pair": (1, "a"),
             "level": Level.HIGH, "mode": Mode.FAST, "none": None}  # fmt: skip
    result = play(
        qwen_chat, _Reports(extra), ScriptedEngine(qwen_chat, [_call(qwen_chat), "3."]), RolloutConfig()
    )
    assert result.status == "completed", result.error
    expected = {"n": 3, "share": 0.5, "ok": True, "pair": [1, "a"], "level": 2, "mode": "fast", "none": None}
    assert {key: result.outcome[key] for key in extra} == expected
    assert all(type(result.outcome[key]) is type(value) for key, value in expected.items())


# ------------------------------------------------------------ a lone surrogate in a row's tool list


def test_a_lone_surrogate_in_a_rows_tools_is_scalar_text(chat: ChatFormat) -> None:
    """Every family: a tool's description, a parameter's doc, an enum value and a property's key holding
    a lone surrogate (a dataset built from JSON escapes). Before: every episode of the row failed as
    t3rl's own bug ("episode loop error: TypeError: TextEncodeInput must be Union[...]"), counted toward
    the run's failure rate. Now each becomes U+FFFD as the messages' do, and the episode is a fresh
    render of itself (no drift)."""
    tools = copy.deepcopy(TOOLS)
    function = tools[1]["function"]
    function["description"] = "Repeat \ud800 a text."
    function["parameters"]["properties"]["text"] |= {"description": "lo \udfff", "enum": ["x", "\ud83d"]}
    function["parameters"]["properties"]["mode\udc00"] = {"type": "string"}
    row = task(("Add 1 and 2.",))
    row["metadata"]["tools"] = tools
    engine = ScriptedEngine(chat, [_call(chat), "The sum is 3."])
    result = asyncio.run(
        run_episode(
            row, env=ToyEnv(("Add 1 and 2.",)), engine=engine, chat=chat, parser=family_parser(chat),
            sampling=SamplingParams(), limits=RolloutConfig(tito_drift_check=True),
        )
    )  # fmt: skip
    assert result.status == "completed", result.error
    assert result.drift_at is None
    prompt = chat.decode(result.prompt_ids)
    assert "Repeat \ufffd a text." in prompt and "mode\ufffd" in prompt
    assert tools[1]["function"]["description"] == "Repeat \ud800 a text."  # the row itself is untouched


# ------------------------------------------------------------ a world's finish or aclose that never returns


class _Hangs(ToyEnv):
    """The toy world whose finish() and/or aclose() never return (a rubric awaiting a judge that is gone).
    The bound is a second: no toy reset or step comes near it, however busy the machine."""

    CALL_TIMEOUT_S = 1.0

    def __init__(self, hang: tuple[str, ...]) -> None:
        super().__init__(("Add 1 and 2.",))
        self.hang = hang

    async def finish(self) -> None:
        if "finish" in self.hang:
            await asyncio.Event().wait()

    async def aclose(self) -> None:
        if "aclose" in self.hang:
            await asyncio.Event().wait()
        self.closed = True


def _bounded_play(chat: ChatFormat, env: ToyEnv) -> EpisodeResult:
    """One episode of the toy task, given up after 60 s (a hang fails the test rather than holding it)."""
    engine = ScriptedEngine(chat, [_call(chat), "The sum is 3."])
    episode = run_episode(
        task(("Add 1 and 2.",)), env=env, engine=engine, chat=chat, parser=family_parser(chat),
        sampling=SamplingParams(), limits=RolloutConfig(),
    )  # fmt: skip
    return asyncio.run(asyncio.wait_for(episode, 60))


def test_a_worlds_finish_that_never_returns_fails_the_episode_within_its_bound(qwen_chat: ChatFormat) -> None:
    """`finish()` was awaited unbounded (reset and step were bounded by CALL_TIMEOUT_S): the episode, and
    the eval or the rollout batch with it, waited for good. Now the world's failure, named; an aclose()
    that never returns is left after the bound (logged), the episode's result kept."""
    result = _bounded_play(qwen_chat, _Hangs(("finish", "aclose")))
    assert result.status == "failed" and result.failure is not None
    assert result.failure.label == "env/TimeoutError"
    assert "_Hangs.finish() did not return within 1 s (_Hangs.CALL_TIMEOUT_S;" in (result.error or "")

    kept = _bounded_play(qwen_chat, _Hangs(("aclose",)))
    assert kept.status == "completed" and kept.outcome == {"turns_answered": 1, "turns": 1}


# ------------------------------------------------------------ text before the model's reasoning block

# (tool-call parser, reasoning parser, think tags): the shipped families that read reasoning, and a
# configuration of think tags alone (a model option without an SGLang reasoning parser).
_REASONING = [("qwen25", "qwen3", None), ("glm45", "glm45", None), ("qwen25", None, ("<think>", "</think>"))]


@pytest.mark.parametrize(("calls", "reasoning", "tags"), _REASONING)
@pytest.mark.parametrize("first", ["call", "answer"])
def test_text_before_the_reasoning_block_is_a_format_error(
    calls: str, reasoning: str | None, tags: tuple[str, str] | None, first: str
) -> None:
    """A call (or an answer) written before `<think>…</think>`. Before: SGLang's reasoning parser read
    every text before the end tag as reasoning, so the call vanished into it and the world was handed
    an empty answer, without a word (with think tags alone, the text was kept: two readers, two
    readings). Now one reading: a block the model opens opens its turn, else a format error saying so."""
    parser = ToolCallActionParser(
        ParsersConfig(tool_call_parser=calls, reasoning_parser=reasoning, think_tags=tags), TOOLS
    )
    head = render_calls(calls, [ToolCall("add", {"a": 1, "b": 2})]) if first == "call" else "The sum is 3."
    action = parser.parse(head + "\n\n<think>Let me check.</think>\n\nDone.")
    assert isinstance(action, InvalidAction), action
    assert "the reasoning block <think>…</think> must open the turn" in action.error
    assert "write the reasoning first, then the answer or the tool calls" in action.error

    # The opposite: the block first (after whitespace, as GLM writes its role's newline) is read as before.
    action = parser.parse(
        "\n<think>Let me add.</think>\n" + render_calls(calls, [ToolCall("add", {"a": 1, "b": 2})])
    )
    assert isinstance(action, ToolCallAction) and action.calls == (ToolCall("add", {"a": 1, "b": 2}),), action
    assert action.reasoning == "Let me add."


# ------------------------------------------------------------ calls written one after another, every format


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_calls_written_one_after_another_are_all_read_or_refused(fmt: str) -> None:
    """Every call format t3rl renders: two or three calls, each written whole, glued or separated (a
    newline, a blank line, a space, Llama-3's ';', a line of text). Each is read, or the turn is a format
    error: never fewer calls than written. Before: Mistral's second `[TOOL_CALLS] [...]` list was
    dropped (SGLang reads the first; t3rl's counter read only the first too), its calls never run and
    nothing said."""
    parser = ToolCallActionParser(ParsersConfig(tool_call_parser=fmt), TOOLS)
    calls = [
        ToolCall("add", {"a": 1, "b": 2}),
        ToolCall("echo", {"text": "x"}),
        ToolCall("add", {"a": 3, "b": 4}),
    ]
    for count in (2, 3):
        for separator in ("", "\n", "\n\n", " ", ";", "\nThen:\n"):
            text = separator.join(render_calls(fmt, [call]) for call in calls[:count])
            action = parser.parse(text)
            assert isinstance(action, InvalidAction) or (
                isinstance(action, ToolCallAction) and action.calls == tuple(calls[:count])
            ), (separator, action)
    if fmt == "mistral":
        action = parser.parse(render_calls(fmt, calls[:1]) + "\n" + render_calls(fmt, calls[1:2]))
        assert isinstance(action, InvalidAction)
        assert "write every call in one [TOOL_CALLS] list, not 2 [TOOL_CALLS] lists" in action.error


# ------------------------------------------------------------ the eval's record of an aborted episode


class _PassesUntouched(ToyEnv):
    """A world whose own verdict is 1.0 before any action (tau2's tasks whose database check passes
    untouched)."""

    def outcome(self) -> dict[str, Any]:
        return {**super().outcome(), "accuracy": 1.0}


class _PassesFactory(ToyFactory):
    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        return _PassesUntouched(row["metadata"]["questions"])


@pytest.mark.parametrize("partial", [False, True], ids=["no-answer", "cut-mid-answer"])
def test_an_episode_the_engine_aborted_is_no_success_in_the_eval(
    qwen_chat: ChatFormat, partial: bool
) -> None:
    """The engine failed the first call (or aborted it mid-answer) of a task its world already scores
    solved. Before: the record said `success: true` beside `status: aborted`, so its attribution was
    None (an engine failure unattributed) and the eval's progress line counted it solved. Now an episode
    the engine did not finish is solved by nobody: success false, attributed to the engine."""
    runner = toy_runner(qwen_chat, factory=_PassesFactory())
    ids = qwen_chat.encode("The sum") if partial else []
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "abort", error="the server died")])
    job = SimpleNamespace(row=task(), seed=0, task_id="toy", category="toy", sample=0, repeat=0)
    record = asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))
    assert (record["status"], record["success"], record["engine_failure"]) == ("aborted", False, True)
    assert record["attribution"] == {
        "party": "infrastructure",
        "kind": "engine_failure",
        "evidence": "the server died",
    }

    runner = toy_runner(
        qwen_chat, factory=_PassesFactory()
    )  # the opposite: a finished episode keeps its verdict
    record = asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))
    assert (record["status"], record["success"], record["attribution"]) == ("completed", True, None)


# ------------------------------------------------------------ SGLang's three counts of its output tokens


def _body(entries: int, **meta: Any) -> bytes:
    """A /generate answer of `entries` tokens with their log-probs, without output_ids (a proxy that
    answers the meta_info alone), meta_info holding `meta` too."""
    logprobs = [[-0.5, 100 + i, None] for i in range(entries)]
    info = {"finish_reason": {"type": "stop", "matched": 103}, "output_token_logprobs": logprobs, **meta}
    return json.dumps({"text": "", "meta_info": info}).encode()


def test_an_answer_whose_log_probs_fall_short_of_its_completion_tokens_is_refused() -> None:
    """SGLang states its output's length three times: output_ids, output_token_logprobs and
    meta_info.completion_tokens (len(output_ids)). Only the first two were compared, so an answer
    without output_ids whose log-prob list was cut short (3 of 5 tokens) was taken as the whole answer:
    the tokens past the cut were lost from the episode the server went on with. Now a BadResponse
    (retried, then the engine's failure); counts that agree, or no count, are read as before."""
    with pytest.raises(
        BadResponse, match=r"output_token_logprobs \(3 tokens\) are not the answer's completion_tokens \(5\)"
    ):
        parse_generation(_body(3, completion_tokens=5))
    assert parse_generation(_body(3, completion_tokens=3)).token_ids == [100, 101, 102]
    assert parse_generation(_body(3)).token_ids == [100, 101, 102]
    assert parse_generation(_body(0, completion_tokens=0)).token_ids == []


def test_the_eval_record_counts_the_tokens_dropped_after_a_stop(qwen_chat: ChatFormat) -> None:
    """Wave five dropped what an engine answers past a turn's stop and counted it for slime's metrics
    (t3rl_metrics.after_stop_tokens); an eval's record said nothing of it (left by wave five). Now the
    record carries it beside cut_tokens (and summary.json sums both alike)."""
    call = [*qwen_chat.encode(_call(qwen_chat)), qwen_chat.stop_token_ids[0]]
    junk = qwen_chat.encode(" junk")
    answer = [*qwen_chat.encode("3."), qwen_chat.stop_token_ids[0]]
    runner = toy_runner(qwen_chat)
    runner.engine = FixedEngine(
        [
            Generation(call + junk, [-0.5] * len(call + junk), "stop"),
            Generation(answer, [-0.5] * len(answer), "stop"),
        ]
    )
    job = SimpleNamespace(
        row=task(("Add 1 and 2.",)), seed=0, task_id="toy", category="toy", sample=0, repeat=0
    )
    record = asyncio.run(eval_runner._run_episode(runner, job, SamplingParams(), 1))
    assert record["status"] == "completed" and record["after_stop_tokens"] == len(junk) > 0


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_tool_name_holding_a_lone_surrogate_is_unwritable(fmt: str) -> None:
    """The prompt shows a tool's lone surrogate as U+FFFD (kind three), so a name holding one is a name
    no model can write: every call of it was refused as 'unknown function', the model's format error,
    unsaid. Now the tool list is refused when its parser is built (as wave five refuses names a format
    cannot write), the message valid UTF-8 for a log or a record."""
    tools = copy.deepcopy(TOOLS)
    tools[0]["function"]["name"] = "ad\ud800d"
    with pytest.raises(UnwritableTool) as refused:
        ToolCallActionParser(ParsersConfig(tool_call_parser=fmt), tools)
    assert f"the tool name 'ad\\ud800d' cannot be written in the {fmt} call format" in str(refused.value)
    str(refused.value).encode("utf-8")


# ------------------------------------------------------------ a world editing the messages it returned


class _Annotates(ToyEnv):
    """The toy world keeping the messages it returned (its own history) and annotating them later."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, Any]] = []

    async def step(self, action: Any) -> Transition:
        for message in self.sent:
            message["content"] += " (seen)"
        transition = await super().step(action)
        self.sent.extend(transition.messages)
        return transition


def test_a_world_editing_the_messages_it_returned_changes_nothing_recorded(qwen_chat: ChatFormat) -> None:
    """The episode kept the world's message objects: a world editing them after the step (trimming or
    annotating its own history) changed the recorded conversation (eval records, slime's metadata, a
    user simulator's context) away from the tokens the model read; only the drift check saw it. Now
    the episode copies each message it takes: the record is what the model read, no drift."""
    call = _call(qwen_chat)
    engine = ScriptedEngine(qwen_chat, [call, "3.", call, "7."])
    result = play(qwen_chat, _Annotates(), engine, RolloutConfig(tito_drift_check=True))
    assert result.status == "completed" and result.drift_at is None
    observed = [m["content"] for m in result.messages if m["role"] in ("tool", "user")]
    assert observed == ["Add 1 and 2.", "3", "Now add 3 and 4.", "3"]


# ------------------------------------------------------------ the reward of an episode the engine aborted


class _NeedsTaskReward(Reward):
    """A reward reading a score the world sets only once the episode is played (tau2's task_reward)."""

    def __call__(self, inp: RewardInput) -> RewardResult:
        return RewardResult(float(inp.outcome["task_reward"]))


def test_an_episode_the_engine_aborted_is_not_scored(qwen_chat: ChatFormat) -> None:
    """The runner scored an episode the engine aborted, which no score measures (the eval leaves it out,
    slime removes it): a reward reading the world's unfinished outcome failed in its own words, and the
    error read 'the server died; reward failed: KeyError: 'task_reward'', a second fault that was none.
    Now such an episode is not scored (0.0, the reward not called), its error the engine's alone."""
    runner = toy_runner(qwen_chat, reward=_NeedsTaskReward())
    runner.engine = FixedEngine([Generation([], [], "abort", error="the server died")])
    result, reward = asyncio.run(runner.run(task()))
    assert (result.status, result.error, reward.value) == ("aborted", "the server died", 0.0)
    assert result.failure is not None and result.failure.label == "engine/abort"
