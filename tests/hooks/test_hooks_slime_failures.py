"""Episodes the infrastructure broke never become rewards: removed from training with their prompt
group, counted by type in the rollout and eval metrics, and too many of them stop the run with the
first error and its traceback."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from t3rl_core.engines.base import Generation
from t3rl_core.hooks import slime as hooks
from t3rl_core.hooks.failures import FailureRateExceeded
from tests.hooks.slime_fakes import (
    EvalOutput,
    MissingPackageEnv,
    Progress,
    fake_slime,
    slime_args,
    toy_sample,
    use_runner,
)
from tests.rollout.fakes import FixedEngine
from tests.support.slime_sample import Sample


def _play(args, samples, evaluation=False):
    async def play():
        return await asyncio.gather(*(hooks.generate(args, s, {}, evaluation=evaluation) for s in samples))

    return asyncio.run(play())


def test_a_world_error_is_removed_from_training_with_its_group_and_counted(monkeypatch, qwen_chat):
    use_runner(monkeypatch, qwen_chat, env=MissingPackageEnv)
    args = slime_args(max_failure_rate=0.5)
    [broken] = _play(args, [toy_sample(0, group=0)])
    assert broken.status is Sample.Status.FAILED and broken.remove_sample
    failure = broken.metadata["t3rl_failure"]
    assert (failure["kind"], failure["error_type"]) == ("env", "ModuleNotFoundError")
    assert "bfcl_eval_not_installed" in failure["message"] and "Traceback" in failure["traceback"]

    use_runner(monkeypatch, qwen_chat)
    healthy = _play(args, [toy_sample(i, group=i // 4) for i in range(1, 8)])
    assert all(not s.remove_sample and s.reward == 1.0 for s in healthy)

    batch = [broken, *healthy]  # slime's flattened batch: groups 0 and 1 of four samples each
    extra: dict = {}
    hooks.log_rollout_data(3, args, batch, extra, 1.0)
    # The whole first group leaves training (its rewards would still shift the group's GRPO baseline).
    assert [s.remove_sample for s in batch] == [True] * 4 + [False] * 4
    assert extra["rollout/failures/env/ModuleNotFoundError"] == 1.0
    assert extra["rollout/failures/rate"] == pytest.approx(1 / 8)
    assert extra["rollout/failures/removed_samples"] == 4.0
    # Scores average the policy's episodes only: the failed one's reward counts nowhere.
    assert extra["rollout/average/reward"] == 1.0 and extra["rollout/multi_turn_base/reward"] == 1.0


def test_a_step_whose_failures_pass_the_rate_stops_the_run_with_the_first_traceback(monkeypatch, qwen_chat):
    use_runner(monkeypatch, qwen_chat, env=MissingPackageEnv)
    args = slime_args(max_failure_rate=0.25, rollout_batch_size=2, n_samples_per_prompt=2)
    monkeypatch.setattr(hooks, "training_step", lambda: 7)
    [first] = _play(args, [toy_sample(0, group=0)])  # one failure in a batch of 4: 0.25 allows it
    assert first.remove_sample
    with pytest.raises(FailureRateExceeded) as stopped:
        _play(args, [toy_sample(1, group=0)])
    message = str(stopped.value)
    assert message.startswith("rollout 7: 2 episodes (a batch has 4 samples) failed on infrastructure")
    assert "env/ModuleNotFoundError × 2" in message and "max_failure_rate=0.25" in message
    assert "sample 0 (multi_turn_base): environment error: ModuleNotFoundError" in message
    assert "Traceback (most recent call last)" in message and "bfcl_eval_not_installed" in message
    # The next step has a budget of its own; evaluation episodes never spend it.
    monkeypatch.setattr(hooks, "training_step", lambda: 8)
    assert _play(args, [toy_sample(2, group=1)])[0].remove_sample
    assert _play(args, [toy_sample(3, group=1)] * 3, evaluation=True)


@pytest.mark.parametrize(
    ("output", "label"),
    [
        (ConnectionError("router unreachable"), "engine/ConnectionError"),
        (Generation([], [], "abort", error="failed 3 time(s)"), "engine/abort"),
    ],
)
def test_engine_failures_in_training_are_failures_too(monkeypatch, qwen_chat, output, label):
    use_runner(monkeypatch, qwen_chat, engine=FixedEngine([output]))
    [sample] = _play(slime_args(max_failure_rate=0.5), [toy_sample(0, group=0)])
    assert sample.status is Sample.Status.ABORTED and sample.remove_sample
    healthy = Sample(index=1, group_index=1, reward=1.0, metadata={})
    extra: dict = {}
    hooks.log_rollout_data(0, slime_args(max_failure_rate=1.0), [sample, healthy], extra, 1.0)
    assert extra[f"rollout/failures/{label}"] == 1.0 and extra["rollout/failures/removed_samples"] == 1.0
    # Only a rollout that lost every sample stops at rate 1.
    with pytest.raises(FailureRateExceeded, match=r"1 of 1 sample\b"):
        hooks.log_rollout_data(0, slime_args(max_failure_rate=1.0), [sample], {}, 1.0)


def test_requests_slime_aborts_after_its_batch_is_full_are_not_counted(monkeypatch, qwen_chat):
    @dataclass
    class GenerateState:  # slime's singleton, as SingletonMeta keeps it
        aborted: bool

    GenerateState._instances = {GenerateState: GenerateState(aborted=True)}
    fake_slime(monkeypatch, {"slime.rollout.sglang_rollout": {"GenerateState": GenerateState}})
    aborted = Generation([], [], "abort", error="SGLang aborted the request: Abort before prefill")
    use_runner(monkeypatch, qwen_chat, engine=FixedEngine([aborted]))
    # A budget of zero failures: counting this episode would stop the run.
    [sample] = _play(slime_args(max_failure_rate=0.0), [toy_sample(0, group=0)])
    assert sample.status is Sample.Status.ABORTED


def test_a_reward_that_raises_is_a_failure_not_a_zero(monkeypatch, qwen_chat):
    use_runner(monkeypatch, qwen_chat, reward=Progress(fail=True))
    [sample] = _play(slime_args(max_failure_rate=1.0), [toy_sample(0, group=0)])
    assert sample.status is Sample.Status.COMPLETED and sample.remove_sample
    assert sample.metadata["t3rl_failure"]["error_type"] == "ZeroDivisionError"
    assert sample.metadata["t3rl_failure"]["kind"] == "reward"


def test_a_batch_over_the_rate_stops_after_its_metrics_are_logged():
    def failed(index):
        failure = {"kind": "env", "error_type": "OSError", "message": "disk full", "traceback": None}
        return Sample(index=index, group_index=index, reward=0.0, metadata={"t3rl_failure": failure})

    batch = [failed(0), failed(1), Sample(index=2, group_index=2, reward=1.0, metadata={})]
    extra: dict = {}
    with pytest.raises(FailureRateExceeded, match=r"rollout 5: 2 of 3 samples failed .*disk full"):
        hooks.log_rollout_data(5, slime_args(max_failure_rate=0.5), batch, extra, 1.0)
    assert extra["rollout/failures/env/OSError"] == 2.0


def _fake_slime_eval(monkeypatch, data):
    fake_slime(
        monkeypatch,
        {
            "slime.rollout.sglang_rollout": {"generate_rollout": lambda *args, **kwargs: EvalOutput(data)},
            "slime.rollout.base_types": {"RolloutFnEvalOutput": EvalOutput, "RolloutFnTrainOutput": list},
        },
    )


def test_eval_scores_leave_failed_samples_out(monkeypatch, qwen_chat):
    use_runner(monkeypatch, qwen_chat, engine=FixedEngine([TimeoutError("no answer")]))
    [lost] = _play(slime_args(), [toy_sample(1, group=1)], evaluation=True)
    use_runner(monkeypatch, qwen_chat)
    kept = _play(slime_args(), [toy_sample(0, group=0), toy_sample(2, group=2)], evaluation=True)
    samples = [kept[0], lost, kept[1]]
    data = {"bfcl": {"rewards": [s.reward for s in samples], "truncated": [False] * 3, "samples": samples}}
    _fake_slime_eval(monkeypatch, data)
    output = hooks.eval_rollout_with_metrics(slime_args(max_failure_rate=0.5), 4, None)
    assert output.data["bfcl"] == {"rewards": [1.0, 1.0], "truncated": [False, False], "samples": kept}
    assert output.metrics["eval/bfcl/failures/engine/TimeoutError"] == 1.0
    assert output.metrics["eval/bfcl/failures/rate"] == pytest.approx(1 / 3)
    # An eval that lost more than the rate stops the run rather than report a score of what is left.
    data["bfcl"] = {"rewards": [0.0, 1.0], "truncated": [False, False], "samples": [lost, kept[0]]}
    with pytest.raises(FailureRateExceeded, match="eval bfcl at rollout 4: 1 of 2 samples"):
        hooks.eval_rollout_with_metrics(slime_args(max_failure_rate=0.25), 4, None)
