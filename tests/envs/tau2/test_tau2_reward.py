"""tau2_shaped against hand-computed values: shaping, curriculum weights, group normalisation, RFT."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from t3rl_core.config import RuntimeConfig
from t3rl_core.rewards.base import RewardInput
from t3rl_core.rewards.tau2 import (
    Normalization,
    ScoredSample,
    Tau2RewardConfig,
    Tau2ShapedReward,
    group_normalize,
    rejection_sampling_filter,
    reward_post_process,
)
from tests.support.slime_sample import Sample


def shaped(outcome, **config):
    return Tau2ShapedReward(Tau2RewardConfig(**config))(RewardInput(outcome=outcome))


def test_shaping_with_the_published_weights_and_alphas():
    # retail, failed, action 3/4, communicate 1/2, db 0:
    #   partial = (0.5·0.75 + 0.15·0.5 + 0·0) / (0.5 + 0.15 + 0) = 0.45 / 0.65 = 0.692307...
    #   α = 0.25 · 0.8 = 0.2 → shaped = 0 + 0.2 · 0.692307 = 0.138461...
    result = shaped(
        {
            "domain": "retail",
            "task_reward": 0.0,
            "partial_components": {"action": 0.75, "communicate": 0.5, "db": 0.0},
        }
    )
    assert result.metrics["partial_score"] == pytest.approx(0.45 / 0.65)
    assert result.metrics["alpha"] == pytest.approx(0.2)
    assert result.value == pytest.approx(0.2 * 0.45 / 0.65)
    assert result.metrics["accuracy"] == 0.0 and result.metrics["partial_action"] == 0.75

    # airline, solved, action 1, db 1: partial = (0.5·1 + 0·1) / 0.5 = 1; α = 0.25 → 1.25
    assert shaped(
        {"domain": "airline", "task_reward": 1.0, "partial_components": {"action": 1.0, "db": 1.0}}
    ).value == (pytest.approx(1.25))

    # telecom boost weights: action 0.5, env_assertion 2/3:
    #   partial = (0.35·0.5 + 0.30·(2/3)) / (0.35 + 0.30) = 0.375 / 0.65; α = 0.25 · 1.6 = 0.4
    telecom = shaped(
        {
            "domain": "telecom",
            "task_reward": 0.0,
            "partial_components": {"action": 0.5, "env_assertion": 2 / 3},
        }
    )
    assert telecom.value == pytest.approx(0.4 * 0.375 / 0.65)

    # only db present and its weight is 0 → partial 0; an unknown domain keeps α = 0.25
    assert shaped({"domain": "mock", "task_reward": 1.0, "partial_components": {"db": 0.0}}).value == 1.0
    # no components at all (e.g. the episode was cut off)
    assert shaped({"domain": "retail", "task_reward": 0.0, "partial_components": {}}).value == 0.0
    # the domain-adaptive multipliers switched off: α = 0.25 everywhere
    flat = shaped(
        {"domain": "retail", "task_reward": 1.0, "partial_components": {"action": 1.0}}, alpha_multipliers={}
    )
    assert flat.value == pytest.approx(1.25)


def test_real_gold_outcome_shapes_to_one_plus_alpha(base_rows, factory, play):
    env = factory(base_rows["retail"]["0"], "train")
    play(env, lambda e: e.oracle())
    # components {action: 1, db: 1} → partial = 0.5 / 0.5 = 1 → 1 + 0.2
    assert shaped(env.outcome()).value == pytest.approx(1.2)


def _scored(task, raw, partial=0.0, removed=False, alpha=0.25):
    return ScoredSample(task, raw, raw + alpha * partial, partial, removed)


def test_curriculum_weights_count_the_current_attempt():
    reward = Tau2ShapedReward(Tau2RewardConfig())
    weights = [reward.curriculum.observe("retail/1", 1.0) for _ in range(6)]
    # attempts 1..4 < 5 → 1; attempt 5: 5/5 = 1 > 0.75 → 0.1; attempt 6 likewise
    assert weights == [1.0, 1.0, 1.0, 1.0, 0.1, 0.1]
    hard = [reward.curriculum.observe("retail/2", 0.0) for _ in range(5)]
    assert hard[-1] == 0.5  # 0/5 < 0.25
    mixed = [reward.curriculum.observe("retail/3", r) for r in (1.0, 0.0, 1.0, 0.0, 1.0)]
    assert mixed[-1] == 1.0  # 3/5 = 0.6 within [0.25, 0.75]
    off = Tau2ShapedReward(Tau2RewardConfig(curriculum={"enabled": False}))
    assert [off.curriculum.observe("retail/1", 1.0) for _ in range(6)][-1] == 1.0


def test_group_normalisation_by_hand():
    # group 1: [1.2, 0.2, 0.0, 0.2]: μ = 0.4, c = [0.8, -0.2, -0.4, -0.2],
    #   std = sqrt((0.64 + 0.04 + 0.16 + 0.04) / 4) = sqrt(0.22)
    # group 2: [1.0, removed, 0.0, 0.5]: μ over valid = 0.5, c = [0.5, 0, -0.5, 0],
    #   std = sqrt(0.5 / 3)
    rewards = [1.2, 0.2, 0.0, 0.2, 1.0, 9.9, 0.0, 0.5]
    valid = [True] * 5 + [False, True, True]
    out = group_normalize(rewards, valid, 4, std=True)
    s1, s2 = 0.22**0.5 + 1e-6, (0.5 / 3) ** 0.5 + 1e-6
    assert out == pytest.approx([0.8 / s1, -0.2 / s1, -0.4 / s1, -0.2 / s1, 0.5 / s2, 0.0, -0.5 / s2, 0.0])
    assert group_normalize(rewards[:4], valid[:4], 4, std=False) == pytest.approx([0.8, -0.2, -0.4, -0.2])
    with pytest.raises(ValueError, match="groups of n_samples_per_prompt=3"):
        group_normalize(rewards, valid, 3, std=True)


def test_post_process_weights_after_normalising():
    reward = Tau2ShapedReward(Tau2RewardConfig(curriculum={"min_attempts": 2}))
    batch = [_scored("a", 1.0), _scored("a", 1.0), _scored("b", 0.0, 0.4), _scored("b", 0.0, removed=True)]
    grpo = Normalization("grpo", True, True, group_size=2)
    result = reward.post_process(batch, grpo)
    # task a: attempt 1 → weight 1, attempt 2 → 2/2 > 0.75 → 0.1; both centred to 0 (equal rewards).
    # task b: the removed sample has weight 0 and is not counted; the valid one: attempt 1 → 1,
    #   shaped 0.1, group μ = 0.1 → c = 0.
    assert result.curriculum_weights == [1.0, 0.1, 1.0, 0.0]
    assert result.rewards == pytest.approx([0.0, 0.0, 0.0, 0.0])

    plain = Normalization("reinforce_plus_plus", True, True, group_size=2)
    reward = Tau2ShapedReward(Tau2RewardConfig(curriculum={"min_attempts": 2}))
    # not group-normalised: shaped · weight = [1·1, 1·0.1, 0.1·1, 0·0]
    assert reward.post_process(batch, plain).rewards == pytest.approx([1.0, 0.1, 0.1, 0.0])


def test_rejection_sampling_keeps_successes_else_the_best_partial():
    reward = Tau2ShapedReward(Tau2RewardConfig())
    assert reward.rejection_keep([_scored("a", 0.0, 0.9), _scored("a", 1.0), _scored("a", 1.0)]) == [
        False,
        True,
        True,
    ]
    # no success: the best partial (0.7 ≥ 0.6) alone; a removed sample never counts
    group = [_scored("a", 0.0, 0.65), _scored("a", 0.0, 0.95, removed=True), _scored("a", 0.0, 0.7)]
    assert reward.rejection_keep(group) == [False, False, True]
    assert reward.rejection_keep([_scored("a", 0.0, 0.59), _scored("a", 0.0, 0.2)]) == [False, False]


def _slime_args(reward=None):
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "tau2"},
            "reward": reward or {"name": "tau2_shaped"},
            "chat": {"tokenizer": "unused"},
            "parsers": {"tool_call_parser": "hermes"},
        }
    )
    return SimpleNamespace(
        t3rl=runtime.model_dump(mode="json"),
        advantage_estimator="grpo",
        rewards_normalization=True,
        grpo_std_normalization=True,
        n_samples_per_prompt=2,
    )


def _sample(task_reward, partial, alpha=0.2):
    return Sample(
        reward=task_reward + alpha * partial,
        metadata={
            "domain": "retail",
            "task_id": "5",
            "outcome": {"task_reward": task_reward},
            "reward_metrics": {"task_reward": task_reward, "partial_score": partial},
        },
    )


def test_slime_hooks_on_slime_shaped_samples():
    args = _slime_args({"name": "tau2_shaped", "curriculum": {"enabled": False}})
    group = [_sample(1.0, 1.0), _sample(0.0, 0.5)]
    raw, rewards = reward_post_process(args, [group])
    # shaped [1.2, 0.1]: μ = 0.65, c = [0.55, -0.55], std = 0.55 → [1, -1] (up to the 1e-6)
    assert raw == [1.0, 0.0]
    assert rewards == pytest.approx([0.55 / (0.55 + 1e-6), -0.55 / (0.55 + 1e-6)])
    assert group[0].metadata["shaped_reward"] == pytest.approx(1.2)

    rft = [_sample(0.0, 0.7), _sample(0.0, 0.3)]
    assert rejection_sampling_filter(args, rft) is True
    assert [s.metadata["rft_keep"] for s in rft] == [True, False]
    assert reward_post_process(args, rft) == ([0.0, 0.0], [1.0, 0.0])  # kept → 1, unnormalised
    assert rejection_sampling_filter(args, [_sample(0.0, 0.1), _sample(0.0, 0.0)]) is False

    # a row no env could start has an empty outcome and no metrics: removed (the generate hook's
    # failure), it scores 0 and is left out; kept, its missing score is named, never a 0 trained on
    unplayable = Sample(reward=0.0, metadata={"task_id": "9", "outcome": {}, "reward_metrics": {}})
    unplayable.remove_sample = True
    assert reward_post_process(args, [unplayable, _sample(1.0, 1.0)])[0] == [0.0, 1.0]
    unplayable.remove_sample = False
    with pytest.raises(ValueError, match=r"tau2 sample /9 gave no 'task_reward'.*missing, not 0"):
        reward_post_process(args, [unplayable, _sample(1.0, 1.0)])
    with pytest.raises(ValueError, match="no t3rl outcome"):
        reward_post_process(args, [Sample(reward=1.0), _sample(1.0, 1.0)])
    with pytest.raises(ValueError, match="some samples of the batch went through the RFT filter"):
        reward_post_process(args, [rft[0], _sample(1.0, 1.0)])
    with pytest.raises(ValueError, match="need reward 'tau2_shaped'"):
        reward_post_process(_slime_args({"name": "binary"}), group)
