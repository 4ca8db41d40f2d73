"""MT-GRPO turn-level credit on CPU: slime-shaped samples through the rollout-side reward post-process,
the batch split over data-parallel ranks as slime splits it, each rank's advantage hook, against a hand
computation of the formula (t3rl_core.hooks.advantage.turn_level_rewards)."""

from __future__ import annotations

import statistics
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from t3rl_core.credit import turn_record, turn_spans
from t3rl_core.hooks.advantage import Topology, turn_level_advantages, turn_level_rewards
from tests.support.slime_sample import Sample

if TYPE_CHECKING:
    import torch


# torch: bound by tests/hooks/conftest.py when the tests run, not imported at collection.
pytestmark = pytest.mark.usefixtures("torch_in_module")


ALONE = Topology()

# Two prompts × 3 samples in slime's flattened order: (outcome reward, response length, turn rewards,
# turn spans). Sample 2 stopped after one turn; sample 4 has an unrewarded final turn (MT-GRPO's form);
# in group 2 only one member reached turn 2 (nothing to compare its turn reward with).
BATCH = [
    (1.0, 10, [1.0, 1.0], [(0, 6), (6, 10)]),
    (0.5, 8, [1.0, 0.0], [(0, 3), (3, 8)]),
    (0.0, 5, [0.0], [(0, 5)]),
    (1.0, 7, [1.0, None], [(0, 4), (4, 7)]),
    (0.0, 6, [0.0, 1.0], [(1, 3), (3, 6)]),
    (0.0, 4, [0.0], [(0, 4)]),
]
GROUP = 3


def samples(batch=BATCH) -> list[Sample]:
    return [
        Sample(
            index=i,
            reward=reward,
            response_length=length,
            metadata={"turn_credit": {"rewards": rewards, "spans": [list(s) for s in spans]}},
        )
        for i, (reward, length, rewards, spans) in enumerate(batch)
    ]


def zscore(values: list[float]) -> list[float]:
    if len(values) == 1:
        return list(values)
    mean, std = statistics.fmean(values), statistics.stdev(values)
    return [(v - mean) / (std + 1e-6) for v in values]


def by_hand(batch=BATCH, weight: float = 1.0) -> list[list[float]]:
    """Â^O per group; Â^T per group and turn index over the members with a reward there (none when
    fewer than two); a rewarded turn's tokens get Â^T + λ·Â^O, every other token Â^O."""
    out: list[list[float]] = []
    for g in range(0, len(batch), GROUP):
        group = batch[g : g + GROUP]
        outcome = zscore([r for r, *_ in group])
        turn_adv: dict[tuple[int, int], float] = {}
        for k in range(max(len(t) for _, _, t, _ in group)):
            members = [i for i, (_, _, t, _) in enumerate(group) if k < len(t) and t[k] is not None]
            if len(members) >= 2:
                for i, z in zip(members, zscore([group[i][2][k] for i in members]), strict=True):
                    turn_adv[i, k] = z
        for i, (_, length, rewards, spans) in enumerate(group):
            values = [outcome[i]] * length
            for k, (start, end) in enumerate(spans):
                if rewards[k] is not None:
                    values[start:end] = [turn_adv.get((i, k), 0.0) + weight * outcome[i]] * (end - start)
            out.append(values)
    return out


def args(weight: float = 1.0, n: int = GROUP) -> SimpleNamespace:
    return SimpleNamespace(n_samples_per_prompt=n, t3rl={"turn_credit": {"outcome_weight": weight}})


def rank_data(rewards: list, partition: list[int]) -> dict:
    """What slime hands a data-parallel rank: its samples' entries of the split lists."""
    return {
        "partition": partition,
        "rewards": [rewards[j] for j in partition],
        "response_lengths": [BATCH[j][1] for j in partition],
        "loss_masks": [torch.ones(BATCH[j][1], dtype=torch.int) for j in partition],
    }


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_advantages_split_over_ranks_equal_the_hand_computation(weight: float) -> None:
    raw, rewards = turn_level_rewards(args(weight), samples())
    assert raw == [r for r, *_ in BATCH]  # slime's raw_reward stays the outcome (pass rates, logs)
    expected = by_hand(weight=weight)
    got: dict[int, list[float]] = {}
    # slime packs by length: both groups have members on both ranks, in any order.
    for partition in ([4, 0, 2], [5, 1, 3]):
        data = rank_data(rewards, partition)
        turn_level_advantages(args(weight), data, topology=lambda: ALONE)
        for pos, advantage, ret in zip(partition, data["advantages"], data["returns"], strict=True):
            assert advantage.dtype == torch.float32 and torch.equal(advantage, ret)
            got[pos] = advantage.tolist()
    for pos in range(len(BATCH)):
        assert got[pos] == pytest.approx(expected[pos], abs=1e-5)


def test_turn_terms_differ_from_trajectory_credit() -> None:
    _, rewards = turn_level_rewards(args(), samples())
    # Samples 0 and 1 share turn 1's reward, so their first turns differ only by Â^O; their second
    # turns differ by the turn term too.
    first = [float(rewards[i][0]) for i in (0, 1)]
    second = [float(rewards[i][-1]) for i in (0, 1)]
    assert first[0] - first[1] != pytest.approx(second[0] - second[1])
    # Trajectory credit would give every token of a sample the same value.
    assert len(set(rewards[0].tolist())) == 2
    # A lone member's turn (group 2, turn 2 of sample 4) and an unrewarded turn get Â^O only.
    outcome_4 = zscore([1.0, 0.0, 0.0])[1]
    assert rewards[4][3:].tolist() == pytest.approx([outcome_4] * 3, abs=1e-6)
    assert rewards[3][4:].tolist() == pytest.approx([zscore([1.0, 0.0, 0.0])[0]] * 3, abs=1e-6)


def test_tokens_before_the_first_turn_get_the_outcome_advantage() -> None:
    _, rewards = turn_level_rewards(args(), samples())
    assert float(rewards[4][0]) == pytest.approx(zscore([1.0, 0.0, 0.0])[1], abs=1e-6)


def test_missing_turn_rewards_and_an_unplanned_post_process_are_refused() -> None:
    batch = samples()
    batch[2].metadata = {}
    with pytest.raises(ValueError, match="turn_rewards and turn_steps"):
        turn_level_rewards(args(), batch)
    data = rank_data([1.0, 0.5, 0.0, 1.0, 0.0, 0.0], [0, 1])
    with pytest.raises(ValueError, match="custom-reward-post-process-path"):
        turn_level_advantages(args(), data, topology=lambda: ALONE)
    with pytest.raises(ValueError, match=r"algorithm\.credit=turn"):
        turn_level_rewards(SimpleNamespace(n_samples_per_prompt=3, t3rl={"turn_credit": None}), samples())


def test_turn_spans_follow_the_steps_of_each_turn() -> None:
    # 5 steps starting at these offsets; turns of 2, 0 (not reached... between), 3 steps.
    assert turn_spans([0, 4, 9, 12, 20], [2, 3], 25) == [(0, 9), (9, 25)]
    assert turn_spans([0, 4], [2, 0], 10) == [(0, 10), (10, 10)]
    record = turn_record({"turn_rewards": [1, None], "turn_steps": [1, 1]}, [0, 5], 8)
    assert record == {"rewards": [1.0, None], "spans": [[0, 5], [5, 8]]}
    assert turn_record({"reward": 1.0}, [0], 3) is None
