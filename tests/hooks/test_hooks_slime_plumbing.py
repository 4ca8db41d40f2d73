"""The slime hooks' bookkeeping with slime-shaped samples (no engine involved)."""

import asyncio
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from t3rl_core.hooks import slime as hooks
from tests.hooks.slime_fakes import EvalOutput, fake_slime
from tests.support.slime_sample import Sample


def _sample(source, reward, status="completed", **reward_metrics):
    return Sample(
        reward=reward,
        status=Sample.Status(status),
        metadata={
            "data_source": source,
            "reward_metrics": reward_metrics,
            "t3rl_metrics": {"num_model_calls": 3},
        },
    )


def test_rollout_log_merges_per_category_means_into_slimes_metrics():
    samples = [
        _sample("base", 1.0, progress=1.0, accuracy=1.0),
        _sample("base", 0.5, "truncated", progress=0.5, accuracy=0.0),
        _sample("miss_func", 0.0, progress=0.0, accuracy=0.0),
    ]
    extra = {"perf/some": 1.0}
    assert hooks.log_rollout_data(7, SimpleNamespace(), samples, extra, 1.0) is False
    assert extra["perf/some"] == 1.0
    assert extra["rollout/base/progress"] == pytest.approx(0.75)
    assert extra["rollout/base/accuracy"] == pytest.approx(0.5)
    assert extra["rollout/base/truncated"] == pytest.approx(0.5)
    assert extra["rollout/miss_func/reward"] == 0.0
    assert extra["rollout/average/progress"] == pytest.approx(0.5)  # mean over all samples
    assert extra["rollout/average/num_model_calls"] == 3.0


def test_eval_log_prefixes_each_dataset_and_accepts_groups():
    data = {
        "bfcl": {
            "rewards": [1.0, 0.0],
            "samples": [[_sample("base", 1.0, accuracy=1.0)], _sample("base", 0.0, accuracy=0.0)],
        }
    }
    extra = {}
    assert hooks.log_eval_rollout_data(3, SimpleNamespace(), data, extra) is False
    assert extra["eval/bfcl/base/accuracy"] == 0.5
    assert extra["eval/bfcl/average/reward"] == 0.5


def test_without_slime_metrics_dict_nothing_is_lost_silently(monkeypatch):
    logged = []
    fake_slime(
        monkeypatch,
        {
            "slime.observability.logging_utils": {
                "log": lambda args, metrics, step_key: logged.append((metrics, step_key))
            },
            "slime.observability.metric_utils": {
                "compute_rollout_step": lambda args, rollout_id: rollout_id * 10
            },
        },
    )
    hooks.log_rollout_data(2, SimpleNamespace(), [_sample("base", 1.0)], None, 0.0)
    assert logged == [(
        {"rollout/base/reward": 1.0, "rollout/base/num_model_calls": 3.0, "rollout/base/truncated": 0.0,
         "rollout/base/aborted": 0.0, "rollout/average/reward": 1.0, "rollout/average/num_model_calls": 3.0,
         "rollout/average/truncated": 0.0, "rollout/average/aborted": 0.0, "rollout/failures/rate": 0.0,
         "rollout/failures/removed_samples": 0.0, "rollout/step": 20},
        "rollout/step",
    )]  # fmt: skip


def test_sampling_params_from_slime():
    params = {
        "temperature": 0.7, "top_p": 0.9, "top_k": 20, "max_new_tokens": 64, "stop": ["</tool_call>"],
        "stop_token_ids": [7], "skip_special_tokens": False, "no_stop_trim": True, "sampling_seed": 5,
    }  # fmt: skip
    sampling = hooks.to_sampling(params)
    assert (sampling.temperature, sampling.top_p, sampling.top_k, sampling.max_new_tokens) == (
        0.7,
        0.9,
        20,
        64,
    )
    assert sampling.stop == ("</tool_call>",) and sampling.stop_token_ids == (7,) and sampling.seed == 5
    assert hooks.to_sampling({"stop": "x"}).stop == ("x",)


def test_status_uses_the_samples_own_enum():
    assert hooks.sample_status(Sample(), "truncated") is Sample.Status.TRUNCATED
    with pytest.raises(ValueError):
        hooks.sample_status(Sample(), "exploded")


@pytest.mark.parametrize(
    ("status", "slime_status", "removed"),
    [("parse_error", "failed", True), ("completed", "completed", False)],
)
def test_a_failed_format_repair_removes_the_sample(monkeypatch, status, slime_status, removed):
    from t3rl_core.rewards.base import RewardResult
    from t3rl_core.rollout.episode import EpisodeResult

    episode = EpisodeResult(
        prompt_ids=[1], response_ids=[2, 3], loss_mask=[0, 0], log_probs=[0.0, 0.0], messages=[],
        response_text="x", status=status, outcome={}, num_model_calls=2, format_repairs=1,
    )  # fmt: skip

    class Runner:
        async def run(self, *args, **kwargs):
            return episode, RewardResult(value=0.0)

    async def runner(args, runtime):
        return Runner()

    monkeypatch.setattr(hooks, "_runner", runner)
    monkeypatch.setattr(hooks.RuntimeConfig, "from_slime_args", classmethod(lambda cls, args: None))
    sample = asyncio.run(hooks.generate(SimpleNamespace(), Sample(prompt=[], metadata={}), {}))
    assert sample.status is Sample.Status(slime_status) and sample.remove_sample is removed
    assert sample.metadata["t3rl_metrics"]["format_repairs"] == 1
    assert sample.response_length == len(sample.loss_mask) == len(sample.rollout_log_probs) == 2


def test_partial_rollout_is_refused():
    with pytest.raises(ValueError, match="partial-rollout"):
        asyncio.run(hooks.generate(SimpleNamespace(partial_rollout=True), Sample(), {}))


def test_reward_func_returns_the_stored_reward_for_samples_and_groups():
    args = SimpleNamespace()
    assert asyncio.run(hooks.reward_func(args, Sample(reward=0.25))) == 0.25
    assert asyncio.run(hooks.reward_func(args, [Sample(reward=1.0), Sample(reward=0.0)])) == [1.0, 0.0]
    with pytest.raises(ValueError, match="no t3rl outcome"):
        asyncio.run(hooks.reward_func(args, Sample()))


@dataclass
class _TrainOutput:
    samples: list
    metrics: dict | None = None


@pytest.mark.parametrize("returned", [EvalOutput({"bfcl": {}}), {"bfcl": {}}])
def test_eval_rollout_always_has_a_metrics_dict(monkeypatch, returned):
    calls = []

    def generate_rollout(args, rollout_id, data_source, evaluation=False):
        calls.append((rollout_id, evaluation))
        return returned

    fake_slime(
        monkeypatch,
        {
            "slime.rollout.sglang_rollout": {"generate_rollout": generate_rollout},
            "slime.rollout.base_types": {
                "RolloutFnEvalOutput": EvalOutput,
                "RolloutFnTrainOutput": _TrainOutput,
            },
        },
    )
    output = hooks.eval_rollout_with_metrics(SimpleNamespace(), 4, None)
    assert calls == [(4, True)]
    assert output.data == {"bfcl": {}} and output.metrics == {"eval/bfcl/failures/rate": 0.0}


def test_signatures_match_how_slime_calls_the_hooks():
    import inspect

    from t3rl_core.hooks import mis

    def names(fn):
        return list(inspect.signature(fn).parameters)

    # slime passes `evaluation` to a custom generate only when the signature names it.
    assert names(hooks.generate) == ["args", "sample", "sampling_params", "evaluation"]
    assert names(hooks.log_rollout_data) == [
        "rollout_id",
        "args",
        "samples",
        "rollout_extra_metrics",
        "rollout_time",
    ]
    assert names(hooks.log_eval_rollout_data) == ["rollout_id", "args", "data", "extra_metrics"]
    assert names(hooks.eval_rollout_with_metrics)[:3] == ["args", "rollout_id", "data_source"]
    keyword_only = {
        name
        for name, p in inspect.signature(mis.compute_mis_weights_with_cp).parameters.items()
        if p.kind is p.KEYWORD_ONLY
    }
    assert keyword_only == {
        "pg_loss", "train_log_probs", "rollout_log_probs", "loss_masks", "total_lengths", "response_lengths"
    }  # fmt: skip
