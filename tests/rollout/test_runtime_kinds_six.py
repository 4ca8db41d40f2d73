"""Runtime kinds of round six: a world's tool whose cost the model controls (tau2's `calculate`), and
calls whose JSON two readers would read apart (a key twice, two argument keys, NaN)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.config import ParsersConfig
from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.data import rows
from t3rl_core.envs.tau2.env import Tau2Env, Tau2EnvFactory, make_factory
from t3rl_core.parsers import tool_calls
from t3rl_core.parsers.render import render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rewards import retool as retool_reward
from t3rl_core.rewards import toolrl as toolrl_reward
from t3rl_core.rewards.base import RewardInput, RewardResult
from t3rl_core.rewards.gapped import GappedPattern
from t3rl_core.types import InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS

T = TypeVar("T")
# One big-integer power in C: minutes with the GIL held, on the loop's process before this round.
_HOSTILE = ToolCall("calculate", {"expression": "9**9**9"})


@pytest.fixture(scope="module")
def retail_row() -> dict[str, Any]:
    return next(iter(rows(Tau2EnvConfig(domains=["retail"]), "base")))


@pytest.fixture(scope="module")
def tau2_factory() -> Iterator[Tau2EnvFactory]:
    factory = make_factory(Tau2EnvConfig())
    yield factory
    asyncio.run(factory.aclose())


async def _started(factory: Tau2EnvFactory, row: dict[str, Any]) -> Tau2Env:
    env = factory(row, "train")
    await env.reset()
    return env


async def _result(env: Tau2Env, call: ToolCall) -> tuple[str, bool]:
    """The call's observation text and tau2's error flag of its result."""
    transition = await env.step(ToolCallAction(calls=(call,), text=""))
    return str(transition.messages[0]["content"]), bool(env.conversation()[-1]["error"])


async def _beside(hostile: Coroutine[Any, Any, Any], *others: Coroutine[Any, Any, T]) -> tuple[bool, list[T]]:
    """The `others`' results, awaited in turn while `hostile` runs, and whether it still ran after them;
    then `hostile` is cancelled (which kills its worker)."""
    task = asyncio.create_task(hostile)
    await asyncio.sleep(0)  # the hostile call reaches its worker first
    results = [await other for other in others]
    running = not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return running, results


def test_a_calculation_past_its_budget_is_a_tool_error(monkeypatch: pytest.MonkeyPatch, retail_row) -> None:
    """Before: `9**9**9` ran in tau2's `calculate` on the event loop (no budget, nothing could stop it)."""
    monkeypatch.setattr(Tau2EnvConfig, "GENERIC_CALL_BUDGET_S", 1.0)
    factory = make_factory(Tau2EnvConfig())

    async def play() -> list[tuple[str, bool]]:
        try:
            env = await _started(factory, retail_row)
            return [
                await _result(env, call) for call in (_HOSTILE, ToolCall("calculate", {"expression": "2+2"}))
            ]
        finally:
            await factory.aclose()

    hostile, after = asyncio.run(play())
    assert hostile == ("Error: calculate ran past its 1 s budget and was stopped", True)
    assert after == ("4.0", False)  # the next call gets a fresh worker


def test_other_episodes_go_on_while_a_calculation_runs(monkeypatch: pytest.MonkeyPatch, retail_row) -> None:
    """No duration asserted: with a budget of minutes, the hostile call is still running when another
    episode's database read (on the loop) and calculation (in the second worker) have finished."""
    monkeypatch.setattr(Tau2EnvConfig, "GENERIC_CALL_BUDGET_S", 600.0)
    factory = make_factory(Tau2EnvConfig())

    async def play() -> tuple[bool, list[tuple[str, bool]]]:
        try:
            hostile_env, other = [await _started(factory, retail_row) for _ in range(2)]
            read = ToolCall("get_product_details", {"product_id": "9523456873"})
            calculation = ToolCall("calculate", {"expression": "(1+2)*3"})
            return await _beside(
                _result(hostile_env, _HOSTILE), _result(other, read), _result(other, calculation)
            )
        finally:
            await factory.aclose()

    running, (read, calculated) = asyncio.run(play())
    assert running
    assert not read[1] and "9523456873" in read[0]
    assert calculated == ("9.0", False)


@settings(max_examples=25, deadline=None)
@given(
    expression=st.one_of(
        st.text(alphabet="0123456789+-*/(). ", max_size=6),
        st.text(max_size=3),
        st.tuples(st.sampled_from("12+")),
        st.just(float("nan")),
    )
)
def test_a_calculation_in_a_worker_is_taus_own(
    tau2_factory: Tau2EnvFactory, retail_row, expression: Any
) -> None:
    """Content and error flag through the worker equal tau2's `get_response` in this process (no `**`
    tower fits in six characters), for any text, and for arguments JSON would change (a tuple, NaN)."""

    async def both() -> tuple[tuple[str, bool], tuple[str, bool]]:
        env = await _started(tau2_factory, retail_row)
        assert env._env is not None
        worker = await _result(env, ToolCall("calculate", {"expression": expression}))
        local = env._env.get_response(env._trajectory[-2].tool_calls[0])  # the same request, in process
        return worker, (local.content or "", local.error)

    worker, local = asyncio.run(both())
    assert worker == local


# Every format t3rl renders calls in, each with how a rendered call {"a": 1, "b": 2} gets its argument
# `a` written twice.
_TWICE = {
    **dict.fromkeys(
        ("qwen25", "hermes", "llama3", "deepseekv3", "deepseekv31", "glm4_0414", "mistral"),
        ('"b": 2', '"a": 5'),
    ),
    **dict.fromkeys(("glm45", "glm47"), ("<arg_key>b</arg_key>", "<arg_key>a</arg_key>")),
    "qwen3_coder": ("<parameter=b>", "<parameter=a>"),
}


def _parser(name: str) -> ToolCallActionParser:
    return ToolCallActionParser(ParsersConfig(tool_call_parser=name), TOOLS)


@pytest.mark.parametrize("name", sorted(_TWICE))
def test_an_argument_written_twice_is_a_format_error(name: str) -> None:
    """Before: Python's last value won silently (`{"a": 1, "a": 5}` ran with a=5) where the model's text
    holds two; a reader of the text (the attempt counter, SGLang's detector) may take the other."""
    text = render_calls(name, [ToolCall("add", {"a": 1, "b": 2})])
    once = _parser(name).parse(text)
    assert isinstance(once, ToolCallAction) and once.calls == (ToolCall("add", {"a": 1, "b": 2}),)
    twice = text.replace(*_TWICE[name])
    action = _parser(name).parse(twice)
    assert isinstance(action, InvalidAction), (name, action)
    assert "'a'" in action.error


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "add", "arguments": {"a": {"x": 1, "x": 2}, "b": 2}}\n</tool_call>',
        '<tool_call>\n{"name": "echo", "name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}, '
        '"parameters": {"a": 5, "b": 5}}\n</tool_call>',
        '<tool_call>\n{"name": "add", "arguments": {"a": NaN, "b": Infinity}}\n</tool_call>',
    ],
)
def test_a_call_two_readers_would_read_apart_is_a_format_error(text: str) -> None:
    """Before: a nested key twice and a name twice ran with the last value; a call with both "arguments"
    and "parameters" was counted by t3rl's reader from "arguments" and run by SGLang's from "parameters"
    (a=5, b=5); NaN and Infinity, which JSON has not, reached the world."""
    assert isinstance(_parser("qwen25").parse(text), InvalidAction)


# The reference rewards' format patterns, as their modules hold them.
_FORMAT_PATTERNS = [pattern.pattern for pattern, _ in toolrl_reward._FORMAT_PATTERNS.values()]
_FORMAT_PATTERNS.append(retool_reward._FORMAT.pattern)


def _pieces_text(pattern: GappedPattern) -> st.SearchStrategy[str]:
    """Texts near a match: the pattern's pieces in order (each whole, dropped, its second half, or
    without its first character, as if it overlapped the piece before), with fillers of pieces, halves
    and other characters between them, and an end that `$` may or may not accept."""
    parts = [*pattern.pieces, *(piece[len(piece) // 2 :] for piece in pattern.pieces), "\n", "x", "}"]
    filler = st.lists(st.sampled_from(parts), max_size=3).map("".join)
    n = len(pattern.pieces)
    kinds = ["whole"] * 6 + ["half", "first cut", "none"]
    kept = st.lists(st.sampled_from(kinds), min_size=n, max_size=n)
    fillers = st.lists(filler, min_size=n + 1, max_size=n + 1)

    def build(drawn: tuple[list[str], list[str], str]) -> str:
        kinds, between, end = drawn
        pieces = [
            {"whole": p, "half": p[len(p) // 2 :], "first cut": p[1:], "none": ""}[k]
            for p, k in zip(pattern.pieces, kinds, strict=True)
        ]
        return "".join(f + p for f, p in zip(between, [*pieces, ""], strict=True)) + end

    return st.tuples(kept, fillers, st.sampled_from(["", "\n", "\n\n", "x", "\nx"])).map(build)


# Each pattern's strategy built once: one built per example (its lists' and maps' definitions worked out
# again each time) was a third of the test's CPU. The same strategy (as many distinct texts, 515 of 600);
# the mutations of t3rl_core/rewards/gapped.py it caught before (`$` before a final newline dropped, a
# piece's end or the last piece's start off by one, the anchor read as `in`) it catches still.
_PIECES_TEXTS = {source: _pieces_text(GappedPattern(source)) for source in _FORMAT_PATTERNS}


@settings(max_examples=600, deadline=None, derandomize=True)
@given(data=st.data(), source=st.sampled_from(_FORMAT_PATTERNS))
def test_gapped_patterns_match_as_re_search_does(data: st.DataObject, source: str) -> None:
    pattern = GappedPattern(source)
    text = data.draw(_PIECES_TEXTS[source])
    assert pattern.search(text) == (re.search(source, text, re.DOTALL) is not None), text


@settings(max_examples=200, deadline=None)
@given(
    text=st.lists(st.sampled_from(["<answer>", "</answer>", "<answer", "x", "\n"]), max_size=10).map("".join)
)
def test_the_first_answer_is_the_lazy_regexs(text: str) -> None:
    match = re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)
    assert retool_reward.first_answer(text) == (match.group(1) if match else None)


def test_a_pattern_with_any_other_construct_is_refused() -> None:
    for source in (r"^<think>.+</think>$", r"a|b", r"<answer>[0-9]*</answer>", r"(a).*b", r".*b"):
        with pytest.raises(ValueError):
            GappedPattern(source)


def test_a_repeating_output_is_scored_without_backtracking() -> None:
    """Before: `re.search` of the reference patterns backtracked in cubic time on model text: 18 kB of a
    repeated ToolRL call block took 8 s, 4 kB of ReTool's repeated `<answer>\\boxed{}}` 13 s (here 90 kB
    and 60 kB: hours), on the episode loop. No duration asserted: before, this test does not end."""
    block = "</think>\n<tool_call>\n\n</tool_call>\n<response>"
    prediction = "<think>" + block * 2000 + "x"
    ground_truth = (
        '<think>a</think>\n<tool_call>\n{"name": "f", "parameters": {}}\n</tool_call>\n<response>r</response>'
    )
    reward = toolrl_reward.ToolRLReward(toolrl_reward.ToolRLRewardConfig())
    assert reward.format_score(prediction, ground_truth, 0) == reward.format_range(0)[1]
    response = "<answer>\\boxed{}}" * 4000 + "x"
    result = retool_reward.ReToolOutcomeReward(retool_reward.ReToolRewardConfig())(
        RewardInput(outcome={"response": response, "ground_truth": "1"})
    )
    assert result.metrics["format"] == 0.0


def _answer(boxed: str) -> RewardInput:
    response = f"Let me think.\n<answer>\n\\boxed{{{boxed}}}\n</answer>"
    return RewardInput(outcome={"response": response, "ground_truth": "391"})


def test_a_hostile_answer_is_graded_off_the_loop_and_others_go_on() -> None:
    """A boxed `9^{9^{9}}` graded on the episode loop held the process for minutes off the main thread
    (math-verify's SIGALRM timeouts work on the main thread only; before, a grading thread was still
    running after 60 s and the main thread could not join it). Now it is graded in a worker process: with
    a budget of minutes, another episode's answer is graded while it runs (no duration asserted)."""
    reward = retool_reward.ReToolOutcomeReward(retool_reward.ReToolRewardConfig(grading_timeout_s=200))

    async def play() -> tuple[bool, RewardResult, RewardResult]:
        try:
            running, (benign,) = await _beside(
                reward.score_async(_answer("9^{9^{9}}")), reward.score_async(_answer("391"))
            )
            return running, benign, await reward.score_async(_answer("17*23"))
        finally:
            await reward.aclose()

    running, benign, after = asyncio.run(play())
    assert running
    assert benign == after == RewardResult(1.0, {"score": 1.0, "format": 1.0, "graded": 1.0, "acc": 1.0})


def test_an_answer_past_its_grading_budget_is_not_graded() -> None:
    """Not correct (the reference's 0 with the format) and not graded: no `acc` (wave nine)."""
    reward = retool_reward.ReToolOutcomeReward(retool_reward.ReToolRewardConfig(grading_timeout_s=1))

    async def grade() -> RewardResult:
        try:
            return await reward.score_async(_answer("9^{9^{9}}"))
        finally:
            await reward.aclose()

    graded = asyncio.run(grade())
    assert (graded.value, graded.metrics) == (0.0, {"score": 0.0, "format": 1.0, "graded": 0.0})
    assert graded.ungraded is not None and "past its budget of 3 s" in graded.ungraded  # wave ten


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "x", "\n"]), max_size=10).map("".join))
def test_tag_order_is_read_as_the_lazy_blocks_read_it(text: str) -> None:
    """Tags in order alternate exactly when the lazy block regex finds one block per opener (what decided
    "nested or out of order" before, in quadratic time on closers then openers)."""
    order = re.compile("(<tool_call>)|</tool_call>")
    blocks = re.findall("<tool_call>(.*?)</tool_call>", text, re.DOTALL)
    balanced = text.count("<tool_call>") == text.count("</tool_call>")
    assert not balanced or tool_calls._alternate(order, text) == (len(blocks) == text.count("<tool_call>"))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("mistral", "[TOOL_CALLS] []"),
        ("mistral", "[TOOL_CALLS]"),
        ("llama3", "<|python_tag|>"),
        ("deepseekv3", "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>"),
        ("deepseekv31", "<｜tool▁calls▁begin｜>\n<｜tool▁calls▁end｜>"),
        ("qwen25", "<tool_call>\n</tool_call>"),
    ],
)
def test_a_call_marker_with_no_call_is_a_format_error(name: str, text: str) -> None:
    """Before: llama3's lone <|python_tag|> and DeepSeek's empty block of calls were answers (the markers
    their text); mistral's empty list was an error that said "1 of 1 tool call(s) could not be parsed".
    Qwen's empty call held."""
    action = _parser(name).parse(text)
    assert isinstance(action, InvalidAction), action
    assert "could not be parsed" not in action.error


def test_closers_before_openers_are_out_of_order_in_linear_time() -> None:
    """Before: 4,000 closers then 4,000 openers (92 kB) took 2.1 s of the loop, 16,000 of each half a
    minute (32 s measured); no duration asserted."""
    action = _parser("qwen25").parse("</tool_call>" * 16000 + "<tool_call>" * 16000)
    assert isinstance(action, InvalidAction) and "out of order" in action.error
