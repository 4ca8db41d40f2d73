"""ReTool's outcome reward (Agent-R1): −1 for a bad final format, else 1 for a right boxed answer, else 0.

The response (model text with the `<interpreter>` blocks spliced in, cut at the end-of-turn token) must
end with `<answer> … \\boxed{…} … </answer>` (`re.search(r'<answer>.*\\boxed\\{.*\\}.*</answer>$',
…, re.DOTALL)`; as with any `$` without MULTILINE, one final newline may follow). The answer is the last
`\\boxed{…}` (braces balanced) inside the first `<answer>…</answer>`, graded against the reference for
mathematical equivalence with math-verify (Agent-R1 used mathruler's grader). Any failure scores −1.

A grading has three outcomes: right, wrong, or not graded (math-verify raised, ran past its budget of
CPU time, or its worker died). The value is the reference's for each (an answer not graded is not
correct: 0 with the format, −1 when grading raised or without the format), and the metric `graded`
(1.0 / 0.0) says which episodes were graded; `acc` is reported for graded episodes only, so a batch's
mean accuracy is never lowered by answers nobody graded (slime and the eval average each metric over
the episodes reporting it).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from t3rl_core.config import RewardConfig
from t3rl_core.envs.bounded_calls import CallWorkers, WorkerLost
from t3rl_core.fields import SECONDS_USUAL, ChatTag
from t3rl_core.finite import MissingScore, shown, verdict_flag
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult, task_named
from t3rl_core.rewards.gapped import GappedPattern

_FORMAT = GappedPattern(r"<answer>.*\\boxed\{.*\}.*</answer>$")
_OPEN, _CLOSE = "<answer>", "</answer>"
_BOXED = "\\boxed{"


class ReToolRewardConfig(RewardConfig):
    """ReTool's {−1, 0, 1} outcome reward."""

    NEEDS_OUTCOME = frozenset({"response", "ground_truth"})
    READS_FORMAT = "code_block"  # ReToolEnvConfig.ACTION_FORMAT: a math answer, boxed in the text

    name: Literal["retool_outcome"] = "retool_outcome"
    # The response is cut at the first occurrence of this token (Qwen's <|im_end|>); "" = no cut.
    end_of_turn: ChatTag | Literal[""] = "<|im_end|>"
    # math-verify's budget for parsing or comparing once: a grading (two parses, one comparison) may use
    # three of it in CPU time (of its worker process on the episode loop, of the process offline).
    grading_timeout_s: Annotated[int, SECONDS_USUAL] = Field(5, ge=1)


class ReToolOutcomeReward(Reward):
    """score = acc if the format holds else −1; metrics: score, format, graded, acc (graded only).

    On the episode loop (`score_async`) the grading runs in a tool-call worker process killed past
    three grading timeouts of its CPU time (t3rl_core/envs/bounded_calls.py): math-verify's own
    timeouts are SIGALRM handlers, which run on the main thread only and never inside one long
    operation in C (a boxed `9^{9^{9}}` held the process, and every episode, for minutes), and they
    count wall time: on a loaded machine a right answer whose parse timed out was compared as text and
    scored wrong. The worker grades without them; the budget is its CPU time, so the machine's load
    does not decide the grade. An answer not graded within it is not graded (`graded` 0.0). Called
    directly (offline scoring, `t3rl score`) on the main thread, the grading has the same budget of
    the process's CPU time (`_within_cpu`); off it, no bound (no signal can be set there)."""

    def __init__(self, config: ReToolRewardConfig) -> None:
        self.config = config
        self._workers: CallWorkers | None = None  # started with the first graded answer

    def __call__(self, inp: RewardInput) -> RewardResult:
        text, ground_truth = self._graded_text(inp)
        budget = 3 * self.config.grading_timeout_s
        try:
            answer = _within_cpu(budget, self.is_correct, text, ground_truth)
        except _OutOfBudget:
            return _result(text, NOT_GRADED, why=_past_budget(budget))
        except Exception as exc:  # Agent-R1 scores any exception in grading −1
            return _result(text, NOT_GRADED, raised=True, why=f"{_RAISED} ({type(exc).__name__})")
        # The grader's answer is true or false: None or NaN is no grade (a missing score), never the
        # −1 of a grading that raised nor, for NaN (true to bool()), a right answer.
        return _result(text, verdict_flag({"correct": answer}, "correct", _grader(inp)))

    async def score_async(self, inp: RewardInput) -> RewardResult:
        text, ground_truth = self._graded_text(inp)
        predicted = predicted_answer(text)
        if predicted is None:
            return _result(text, False)
        if self._workers is None:
            self._workers = CallWorkers(["math_verify"])
        budget = 3 * self.config.grading_timeout_s
        try:
            verdict = await self._workers.run(f"{__name__}:grade", [predicted, ground_truth], budget)
        except WorkerLost as lost:
            # The worker died grading (out of memory on the model's expression, a crash in sympy): the
            # answer is not graded, as one past its budget. Raised, it failed the episode as the reward's,
            # counted toward rollout.max_failure_rate: an answer the model writes could stop the run.
            return _result(text, NOT_GRADED, why=f"math-verify's grading worker died ({lost})")
        if verdict not in _GRADES:
            raise MissingScore(
                f"{_grader(inp)} answered {shown(verdict)}, not one of {sorted(_GRADES, key=str)}"
            )
        raised = verdict == GRADING_ERROR
        why = _RAISED if raised else _past_budget(budget)
        return _result(text, _GRADES[verdict], raised=raised, why=why)

    async def aclose(self) -> None:
        if self._workers is not None:
            self._workers.close()

    def bounds(self, inp: RewardInput) -> tuple[float, float]:
        return -1.0, 1.0  # −1 without the format (or when grading raised), else acc in {0, 1}

    def _graded_text(self, inp: RewardInput) -> tuple[str, str]:
        """The response cut at the end-of-turn token, and the reference answer."""
        try:
            response, ground_truth = str(inp.outcome["response"]), str(inp.outcome["ground_truth"])
        except KeyError as missing:
            raise KeyError(f"retool_outcome needs outcome[{missing}] (env retool_python)") from None
        end = self.config.end_of_turn
        return (response.split(end)[0] if end else response), ground_truth

    def is_correct(self, text: str, ground_truth: str) -> bool:
        predicted = predicted_answer(text)
        return predicted is not None and self.equivalent(predicted, ground_truth)

    def equivalent(self, predicted: str, ground_truth: str) -> bool:
        # Without math-verify's wall-time timeouts: the caller bounds the grading's CPU time.
        return equivalent(predicted, ground_truth, None)


class _OutOfBudget(BaseException):
    """A grading past its CPU budget. A BaseException: math-verify reads any Exception inside a parse or
    a comparison as "no parse" / "not equal", which would make the cut grading a wrong answer."""


def _within_cpu(seconds: float, grade: Callable[..., bool], *args: str) -> bool:
    """`grade(*args)`, raising _OutOfBudget once the process has used `seconds` of CPU time in it (on the
    main thread, where a signal handler runs; elsewhere unbounded). CPU time, not wall time: a loaded
    machine does not decide whether an answer is graded."""
    if threading.current_thread() is not threading.main_thread():
        return grade(*args)

    def expire(signum: int, frame: Any) -> None:
        raise _OutOfBudget

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        return grade(*args)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


GRADING_ERROR = "error"
# A grading that gave no answer: math-verify raised, or ran past its budget. Not a wrong answer.
NOT_GRADED = None
# What a grading worker answers, as the grade it is: right, wrong, or not graded (None: the worker ran
# past its budget and was killed; GRADING_ERROR: grading raised).
_GRADES: dict[str | None, bool | None] = {"1": True, "0": False, None: NOT_GRADED, GRADING_ERROR: NOT_GRADED}


def _grader(inp: RewardInput) -> str:
    """How a message names the grading of `inp`'s answer, its task named when the row has an id."""
    return "math-verify's grading" + task_named(inp)


def grade(predicted: str, ground_truth: str) -> str:
    """In a worker: "1", "0", or GRADING_ERROR when grading raised. Without math-verify's wall-time
    timeouts (a parse cut by one is read as no parse and compared as text: a wrong grade under load);
    the worker's CPU budget bounds the grading instead."""
    try:
        return "1" if equivalent(predicted, ground_truth, None) else "0"
    except Exception:
        return GRADING_ERROR


def equivalent(predicted: str, ground_truth: str, timeout_s: int | None) -> bool:
    """math-verify's equivalence of two answers (a plain comparison where one does not parse)."""
    from math_verify import parse, verify  # lazy: math_verify, only when an answer is verified

    gold = parse(f"${ground_truth}$", parsing_timeout=timeout_s)
    guess = parse(f"${predicted}$", parsing_timeout=timeout_s)
    if not gold or not guess:
        return _squash(predicted) == _squash(ground_truth)
    return bool(verify(gold, guess, timeout_seconds=timeout_s))


_RAISED = "math-verify's grading raised"


def _past_budget(budget: float) -> str:
    return f"math-verify's grading ran past its budget of {budget:g} s of CPU time"


def _result(text: str, correct: bool | None, *, raised: bool = False, why: str = "") -> RewardResult:
    """The reward of a response of `text` whose answer is `correct` (NOT_GRADED: no grade, `why` says
    what stopped it; `raised`: because grading raised, which Agent-R1 scores −1). A formatted answer
    not graded has a value standing for no grade (`RewardResult.ungraded`); without the format the
    value is −1 whatever a grade would have said, a measurement of the response."""
    formatted = _FORMAT.search(text)
    if correct is NOT_GRADED:
        score = 0.0 if formatted and not raised else -1.0
        metrics = {"score": score, "format": float(formatted), "graded": 0.0}
        ungraded = f"{why}: the answer's value {score:g} is no grade of it" if formatted else None
        return RewardResult(score, metrics, ungraded)
    score = (1.0 if correct else 0.0) if formatted else -1.0
    metrics = {"score": score, "format": float(formatted), "graded": 1.0, "acc": float(correct)}
    return RewardResult(score, metrics)


def predicted_answer(text: str) -> str | None:
    """The last `\\boxed{…}` of the first `<answer>…</answer>`."""
    answer = first_answer(text)
    return last_boxed(answer.strip()) if answer is not None else None


def first_answer(text: str) -> str | None:
    """What `re.search(r"<answer>(.*?)</answer>", text, re.DOTALL)` captures, found without its quadratic
    search (every later `<answer>` scanned to the end when no `</answer>` follows)."""
    start = text.find(_OPEN)
    end = text.find(_CLOSE, start + len(_OPEN)) if start >= 0 else -1
    return text[start + len(_OPEN) : end] if end >= 0 else None


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{…}`, braces balanced; None if there is none or it is unclosed."""
    start = text.rfind(_BOXED)
    if start < 0:
        return None
    depth, begin = 1, start + len(_BOXED)
    for i in range(begin, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[begin:i]
    return None


def _squash(text: str) -> str:
    return "".join(text.split())
