"""A score a world's scorer did not give (the key missing, None, NaN, a text, a bool) is the episode's
failure, recorded with its task id, in every world: never a silent 0 or 1. Each world's scorer is
mutated where its answer crosses into t3rl (tau2's evaluation, bfcl-eval's checkers, ReTool's math
grader, ToolRL's part scores) and the episode is played through the loop the eval and training share;
its eval record must be `failed`, not solved, naming the task and the missing score. The standalone
scorers (`t3rl score`, `t3rl_core.score`) refuse the same answers. Before: tau2 read `reward or 0.0`
(None: a wrong answer), bfcl's `not answer["valid"]` passed a NaN turn, ReTool's None grade scored
−1 as a grading error, and `bool()` made a NaN verdict solved."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from t3rl_core import score
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.eval.runner import EpisodeJob, _run_episode
from t3rl_core.finite import MissingScore
from t3rl_core.rewards.base import Reward
from t3rl_core.rewards.retool import ReToolOutcomeReward, ReToolRewardConfig
from t3rl_core.rewards.tau2 import Tau2RewardConfig, Tau2ShapedReward
from t3rl_core.rewards.toolrl import ToolRLReward, ToolRLRewardConfig
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.score.verdict import Verdict
from tests.hooks.slime_fakes import Factory
from tests.rollout.fakes import ToyEnv, task

DROP = object()  # the key left out
# What a scorer can hand over where a score was due, beside the key missing.
NOT_A_SCORE = {"none": None, "nan": math.nan, "text": "1.0", "bool": True, "inf": math.inf, "missing": DROP}
# What the loop's record says of such an episode: the scorer's answer is no score (the one reading of
# a scorer's scores, t3rl_core.finite.scored and its kin, raises it).
NAMED = "MissingScore: "


def _runtime(env: dict[str, Any], reward: dict[str, Any]) -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": env,
            "reward": reward,
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "hermes" if env["name"] == "tau2" else "qwen25"},
            "rollout": {"max_num_steps": 100, "max_new_tokens": 4096},
        }
    )


def _record(runner: EpisodeRunner, row: dict[str, Any], task_id: str) -> dict[str, Any]:
    job = EpisodeJob(task_id, "kind", 0, 0, row)
    return asyncio.run(_run_episode(runner, job, SamplingParams(), 0))


def _failed_naming(record: dict[str, Any], task_id: str, kind: str) -> None:
    """The eval record of an episode whose score was missing: failed, not solved, nothing scored, the
    error naming the task and the missing score."""
    assert record["task_id"] == task_id
    assert (record["status"], record["success"], record["reward"]) == ("failed", False, 0.0), record["error"]
    assert task_id in (record["error"] or ""), record["error"]
    assert NAMED in record["error"], record["error"]
    assert record["attribution"]["party"] != "agent", record["attribution"]
    assert kind in record["error"] or kind == "any", record["error"]


def _mutated(answer: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    changed = dict(answer)
    if value is DROP:
        changed.pop(key, None)
    else:
        changed[key] = value
    return changed


# ------------------------------------------------------------------------------------------ tau2


@pytest.fixture(scope="module")
def tau2_world(qwen_chat: ChatFormat) -> Iterator[tuple[EpisodeRunner, dict[str, Any]]]:
    from t3rl_core.envs.tau2.config import Tau2EnvConfig
    from t3rl_core.envs.tau2.data import rows

    config = Tau2EnvConfig.model_validate({"domains": ["retail"], "data": {"limit": 1}})
    row = next(iter(rows(config, "base")))
    runtime = _runtime({"name": "tau2", "domains": ["retail"]}, {"name": "tau2_shaped"})
    engine = ReferenceEngine(ReferenceEngineConfig(seed=3), chat=qwen_chat)
    runner = EpisodeRunner.from_runtime(runtime, engine, chat=qwen_chat)
    yield runner, row
    asyncio.run(runner.aclose())


def _tau2_evaluation(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """tau2's evaluation of every episode, changed by `change` as it crosses into the env."""
    from t3rl_core.envs.tau2 import env as tau2_env

    evaluate = tau2_env.evaluate_episode

    class Changed:
        def __init__(self, info: Any) -> None:
            self.info = info

        def model_dump(self, mode: str = "json") -> dict[str, Any]:
            return change(self.info.model_dump(mode=mode))

    monkeypatch.setattr(tau2_env, "evaluate_episode", lambda *args: Changed(evaluate(*args)))


def test_tau2_solves_its_task_with_the_evaluation_as_is(
    tau2_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, row = tau2_world
    _tau2_evaluation(monkeypatch, lambda info: info)
    record = _record(runner, row, row["metadata"]["task_id"])
    assert (record["status"], record["success"], record["outcome"]["task_reward"]) == ("completed", True, 1.0)


@pytest.mark.parametrize("value", NOT_A_SCORE.values(), ids=NOT_A_SCORE.keys())
def test_a_tau2_evaluation_without_its_reward_fails_the_episode(
    value: Any, tau2_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, row = tau2_world
    _tau2_evaluation(monkeypatch, lambda info: _mutated(info, "reward", value))
    _failed_naming(_record(runner, row, row["metadata"]["task_id"]), row["metadata"]["task_id"], "'reward'")


@pytest.mark.parametrize("value", [None, math.nan, "true", DROP], ids=["none", "nan", "text", "missing"])
def test_a_tau2_check_without_its_verdict_fails_the_episode(
    value: Any, tau2_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gold action's check whose `action_match` is no bool: bool() counted None unmet, NaN met."""
    runner, row = tau2_world

    def change(info: dict[str, Any]) -> dict[str, Any]:
        checks = info["action_checks"]
        assert checks, "the task has gold actions to check"
        return {**info, "action_checks": [_mutated(checks[0], "action_match", value), *checks[1:]]}

    _tau2_evaluation(monkeypatch, change)
    _failed_naming(
        _record(runner, row, row["metadata"]["task_id"]), row["metadata"]["task_id"], "action_match"
    )


@pytest.mark.parametrize("value", NOT_A_SCORE.values(), ids=NOT_A_SCORE.keys())
def test_the_tau2_reward_refuses_an_outcome_without_its_task_reward(value: Any) -> None:
    outcome = _mutated(
        {"domain": "retail", "task_id": "7", "task_reward": 1.0, "partial_components": {"action": 1.0}},
        "task_reward",
        value,
    )
    from t3rl_core.rewards.base import RewardInput

    with pytest.raises(MissingScore, match=r"tau2 task '7'.*'task_reward'"):
        Tau2ShapedReward(Tau2RewardConfig())(RewardInput(outcome=outcome))


# ------------------------------------------------------------------------------------------ BFCL

BFCL_TASK = "multi_turn_base_0"
# What bfcl-eval's state checker can answer that is no verdict: `valid` no bool, or a failure
# without the error type that names it.
CHECKER_ANSWERS = {
    "valid_none": {"valid": None},
    "valid_nan": {"valid": math.nan},
    "valid_text": {"valid": "False"},
    "no_valid": {},
    "failed_untyped": {"valid": False},
    "failed_type_none": {"valid": False, "error_type": None},
    "no_mapping": None,
}


@pytest.fixture(scope="module")
def bfcl_world(qwen_chat: ChatFormat) -> Iterator[tuple[EpisodeRunner, dict[str, Any]]]:
    row = score.bfcl_row(BFCL_TASK)
    runtime = _runtime({"name": "bfcl_multi_turn"}, {"name": "progress"})
    engine = ReferenceEngine(ReferenceEngineConfig(seed=3), chat=qwen_chat)
    runner = EpisodeRunner.from_runtime(runtime, engine, chat=qwen_chat)
    yield runner, row
    asyncio.run(runner.aclose())


def _state_checker(monkeypatch: pytest.MonkeyPatch, answer: Any) -> None:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker

    monkeypatch.setattr(multi_turn_checker, "state_checker", lambda *args: answer)


def test_bfcl_solves_its_task_with_the_checkers_as_they_are(bfcl_world: Any) -> None:
    runner, row = bfcl_world
    record = _record(runner, row, BFCL_TASK)
    assert (record["status"], record["success"], record["progress"]) == ("completed", True, 1.0)


@pytest.mark.parametrize("answer", CHECKER_ANSWERS.values(), ids=CHECKER_ANSWERS.keys())
def test_a_bfcl_checker_without_its_verdict_fails_the_episode(
    answer: Any, bfcl_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, row = bfcl_world
    _state_checker(monkeypatch, answer)
    _failed_naming(_record(runner, row, BFCL_TASK), BFCL_TASK, "state_checker")
    gold = [[turn] for turn in row["metadata"]["bfcl_task"]["ground_truth"]]
    with pytest.raises(MissingScore, match=f"state_checker.*{BFCL_TASK}"):
        score.bfcl(gold, task_id=BFCL_TASK)


# ------------------------------------------------------------------------------ ReTool and ToolRL


def _single_turn_runner(outcome: dict[str, Any], reward: Reward, chat: ChatFormat) -> EpisodeRunner:
    """The toy world answering its questions, its outcome `outcome`: what ReTool's and ToolRL's
    rewards read (their scorers are the rewards)."""

    class Answered(ToyEnv):
        def outcome(self) -> dict[str, Any]:
            return dict(outcome)

    runtime = _runtime({"name": "bfcl_multi_turn"}, {"name": "progress"})
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    return EpisodeRunner(runtime, engine, env_factory=Factory(Answered), chat=chat, reward=reward)


RETOOL = {"response": "<answer>\\boxed{4}</answer>", "ground_truth": "4", "task_id": "retool-7"}
# What a grading worker can answer beside its "1", "0", "error" and None (not graded in time: wrong).
WORKER_ANSWERS = {
    "empty": "",
    "two": "2",
    "float_text": "1.0",
    "true_text": "true",
    "int": 1,
    "nan": math.nan,
}


def _grading_workers(monkeypatch: pytest.MonkeyPatch, answer: Any) -> None:
    from t3rl_core.rewards import retool

    class Workers:
        def __init__(self, preload: Any) -> None:
            pass

        async def run(self, fn: str, args: Any, budget_s: float) -> Any:
            return answer

        def close(self) -> None:
            pass

    monkeypatch.setattr(retool, "CallWorkers", Workers)


@pytest.mark.parametrize("answer", ["1", None], ids=["right", "timed_out"])
def test_retool_scores_what_its_grader_answers(
    answer: Any, qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grading_workers(monkeypatch, answer)
    runner = _single_turn_runner(RETOOL, ReToolOutcomeReward(ReToolRewardConfig()), qwen_chat)
    record = _record(runner, task(), "retool-7")
    assert (record["status"], record["reward"]) == ("completed", 1.0 if answer else 0.0), record["error"]


@pytest.mark.parametrize("answer", WORKER_ANSWERS.values(), ids=WORKER_ANSWERS.keys())
def test_a_retool_grade_that_is_none_fails_the_episode(
    answer: Any, qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grading_workers(monkeypatch, answer)
    runner = _single_turn_runner(RETOOL, ReToolOutcomeReward(ReToolRewardConfig()), qwen_chat)
    _failed_naming(_record(runner, task(), "retool-7"), "retool-7", "math-verify")


@pytest.mark.parametrize("answer", [None, math.nan, "yes", 1.0], ids=["none", "nan", "text", "float"])
def test_retools_grader_in_process_refuses_a_grade_that_is_none(
    answer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grading of `t3rl score` and slime's reward hook (`__call__`): None was −1 (grading raised),
    NaN a right answer."""
    from t3rl_core.rewards import retool

    monkeypatch.setattr(retool, "equivalent", lambda *args: answer)
    with pytest.raises(MissingScore, match=r"math-verify's grading of task 'r-1'.*true or false"):
        score.retool(RETOOL["response"], "4", id="r-1")


TOOLRL = {
    "response": '<think>t</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1}}\n</tool_call>',
    "ground_truth": '<think>t</think>\n<tool_call>\n{"name": "f", "parameters": {"a": 1}}\n</tool_call>',
    "task_id": "toolrl-3",
}


@pytest.mark.parametrize(
    "value",
    [v for v in NOT_A_SCORE.values() if v is not DROP],
    ids=[k for k in NOT_A_SCORE if k != "missing"],
)
def test_a_toolrl_part_score_that_is_none_fails_the_episode(
    value: Any, qwen_chat: ChatFormat, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ToolRLReward, "correctness_score", lambda *args: value)
    runner = _single_turn_runner(TOOLRL, ToolRLReward(ToolRLRewardConfig()), qwen_chat)
    _failed_naming(_record(runner, task(), "toolrl-3"), "toolrl-3", "correctness")
    with pytest.raises(MissingScore, match="toolrl correctness score"):
        score.toolrl(TOOLRL["response"], TOOLRL["ground_truth"])


def test_toolrl_scores_its_parts_as_they_are(qwen_chat: ChatFormat) -> None:
    runner = _single_turn_runner(TOOLRL, ToolRLReward(ToolRLRewardConfig()), qwen_chat)
    record = _record(runner, task(), "toolrl-3")
    assert (record["status"], record["success"], record["reward"]) == ("completed", True, 4.0), record[
        "error"
    ]


# ------------------------------------------------------------------------------ every scorer's end


@pytest.mark.parametrize(
    "reward", [math.nan, None, "1", math.inf, True], ids=["nan", "none", "text", "inf", "bool"]
)
def test_a_verdict_holds_a_finite_reward(reward: Any) -> None:
    with pytest.raises(MissingScore, match=r"the w verdict of task 't'"):
        Verdict("w", "t", reward, False)


@pytest.mark.parametrize("success", [math.nan, None, "False", 1.0], ids=["nan", "none", "text", "float"])
def test_a_verdict_holds_a_bool_success(success: Any) -> None:
    with pytest.raises(MissingScore, match=r"'success' must be true or false"):
        Verdict("w", "t", 1.0, success)
