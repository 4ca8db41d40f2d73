"""World hunt, wave ten: wave nine's leftovers closed by declarations (an ungraded answer is no sample,
a model-played user's unreadable call is answered, an episode says whether its seed reproduces it), and
the kinds found after (docs/explanation/tito.md, "Hunted, wave ten")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.hooks import slime as hooks
from t3rl_core.rewards import retool
from t3rl_core.rewards.base import InvalidReward, Reward, RewardInput, RewardResult, checked
from tests.hooks.slime_fakes import slime_args, toy_sample, use_runner

SAMPLING = {"temperature": 1.0, "max_new_tokens": 64}
FORMATTED = "<answer>\\boxed{391}</answer>"


@pytest.fixture(scope="module")
def qwen() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


# ----------------------------------------------------------- an ungraded answer is no sample (wave 9)


class _Workers:
    """ReTool's grading workers answering one fixed way: a verdict, or a worker that died."""

    def __init__(self, verdict: str | BaseException | None) -> None:
        self.verdict = verdict

    async def run(self, fn: str, args: list[Any], budget_s: float) -> str | None:
        if isinstance(self.verdict, BaseException):
            raise self.verdict
        return self.verdict


def _retool(response: str, verdict: str | BaseException | None) -> RewardResult:
    reward = retool.ReToolOutcomeReward(retool.ReToolRewardConfig())
    reward._workers = _Workers(verdict)  # type: ignore[assignment]
    inp = RewardInput(outcome={"response": response, "ground_truth": "391"})
    return checked(asyncio.run(reward.score_async(inp)))


def test_retool_declares_which_values_are_no_grade() -> None:
    """A formatted answer nobody graded (past its CPU budget, grading raised, its worker died) has a
    value standing for no grade; graded answers, and an unformatted one (−1 whatever a grade said),
    measure the response."""
    from t3rl_core.envs.bounded_calls import WorkerLost

    for verdict, named in ((None, "past its budget"), ("error", "raised"), (WorkerLost("gone"), "died")):
        result = _retool(FORMATTED, verdict)
        assert result.ungraded is not None and named in result.ungraded, result
        assert result.metrics["graded"] == 0.0
    assert _retool(FORMATTED, "1").ungraded is None and _retool(FORMATTED, "0").ungraded is None
    unformatted = _retool(FORMATTED + " and more", None)
    assert unformatted.value == -1.0 and unformatted.ungraded is None


class _Ungraded(Reward):
    def __call__(self, inp: RewardInput) -> RewardResult:
        return RewardResult(0.0, {"graded": 0.0}, "math-verify's grading ran past its budget")


def test_an_ungraded_sample_leaves_training_with_its_group(
    monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat
) -> None:
    """Wave nine left it: a ReTool answer not graded trained at the reference's 0, standing in its
    prompt group as a wrong answer. Now slime's generate hook reads the reward's declaration and fails
    the sample as `reward/NotGraded` (remove_sample, its group removed by the log hook, counted)."""
    use_runner(monkeypatch, qwen, reward=_Ungraded())
    sample = asyncio.run(hooks.generate(slime_args(max_failure_rate=1.0), toy_sample(0, 0), SAMPLING))
    failure = sample.metadata[hooks.METADATA_KEY]
    assert sample.remove_sample and (failure["kind"], failure["error_type"]) == ("reward", "NotGraded")
    assert "ran past its budget" in failure["message"]
    sibling = toy_sample(1, 0)
    use_runner(monkeypatch, qwen)
    sibling = asyncio.run(hooks.generate(slime_args(max_failure_rate=1.0), sibling, SAMPLING))
    assert not sibling.remove_sample
    hooks.log_rollout_data(0, slime_args(max_failure_rate=1.0), [sample, sibling], {}, 0.0)
    assert sibling.remove_sample  # its group's baseline held a value no grade gave


def test_an_ungraded_eval_episode_is_kept(monkeypatch: pytest.MonkeyPatch, qwen: ChatFormat) -> None:
    use_runner(monkeypatch, qwen, reward=_Ungraded())
    args = slime_args(max_failure_rate=1.0)
    sample = asyncio.run(hooks.generate(args, toy_sample(0, 0), SAMPLING, evaluation=True))
    assert not sample.remove_sample and hooks.METADATA_KEY not in sample.metadata


@pytest.mark.parametrize("bad", ["", 0, b"why"])
def test_ungraded_is_a_reason(bad: Any) -> None:
    with pytest.raises(InvalidReward, match="ungraded="):
        checked(RewardResult(0.0, {}, bad))
