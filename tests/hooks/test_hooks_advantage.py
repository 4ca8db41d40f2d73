"""The KL-in-reward GRPO advantage hook on CPU: slime-shaped rollout_data against a hand computation of
veRL's formula, and a real 2-process gloo group whose prompt groups are split across the ranks."""

from __future__ import annotations

import json
import multiprocessing
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from t3rl_core.hooks.advantage import Topology, kl_in_reward_grpo

if TYPE_CHECKING:
    import torch


# torch: bound by tests/hooks/conftest.py when the tests run, not imported at collection.
pytestmark = pytest.mark.usefixtures("torch_in_module")


ALONE = Topology()
SECTION = {"coef": 0.001, "type": "kl"}

# A rollout batch of 2 prompts × 3 samples in slime's flattened order. Mask 0 marks tool-observation
# tokens: their (large) log-prob differences must not reach the penalty.
BATCH = {
    "n": 3,
    "raw_reward": [4.0, 1.0, 4.0, -3.0, 0.0, 2.0],
    "log_probs": [
        [-0.5, -1.0, -0.2],
        [-0.1, -0.3],
        [-2.0, -0.1, -0.4, -0.3],
        [-0.7],
        [-1.5, -0.2, -0.9],
        [-0.6, -0.6],
    ],
    "ref_log_probs": [
        [-0.7, -3.0, -0.2],
        [-0.4, -0.3],
        [-0.5, -0.6, -4.0, -0.1],
        [-0.2],
        [-1.0, -2.0, -0.4],
        [-0.6, -0.9],
    ],
    "loss_masks": [[1, 0, 1], [1, 1], [1, 1, 0, 1], [1], [1, 0, 1], [0, 1]],
}


def by_hand(coef: float, batch: dict = BATCH, masked: bool = True, kind: str = "kl") -> list[float]:
    """veRL: score = reward − coef·Σ kl·mask, z-scored in each group (unbiased std, eps 1e-6)."""
    penalty = {"kl": lambda d: d, "abs": abs, "mse": lambda d: 0.5 * d * d}[kind]
    scores = []
    for reward, lp, ref, mask in zip(
        batch["raw_reward"], batch["log_probs"], batch["ref_log_probs"], batch["loss_masks"], strict=True
    ):
        kl = sum(penalty(a - b) * (m if masked else 1) for a, b, m in zip(lp, ref, mask, strict=True))
        scores.append(reward - coef * kl)
    n, out = batch["n"], []
    for g in range(0, len(scores), n):
        group = scores[g : g + n]
        mean, std = (0.0, 1.0) if n == 1 else (statistics.fmean(group), statistics.stdev(group))
        out += [(s - mean) / (std + 1e-6) for s in group]
    return out


def rollout_data(partition: list[int], batch: dict = BATCH) -> dict:
    """What slime hands the hook on a DP rank holding `partition` (positions in the flattened batch)."""
    return {
        "partition": partition,
        "raw_reward": batch["raw_reward"],
        # Already group-normalised by slime's rollout manager: the hook must not read them.
        "rewards": [99.0] * len(partition),
        "log_probs": [torch.tensor(batch["log_probs"][i]) for i in partition],
        "ref_log_probs": [torch.tensor(batch["ref_log_probs"][i]) for i in partition],
        "loss_masks": [torch.tensor(batch["loss_masks"][i], dtype=torch.int) for i in partition],
        "response_lengths": [len(batch["log_probs"][i]) for i in partition],
    }


def slime_args(coef: float, kind: str = "kl", n: int = 3, **extra) -> SimpleNamespace:
    return SimpleNamespace(
        n_samples_per_prompt=n, kl_coef=coef, t3rl={"kl_in_reward": {"coef": coef, "type": kind}}, **extra
    )


def run_alone(args: SimpleNamespace, data: dict) -> dict[int, float]:
    kl_in_reward_grpo(args, data, topology=lambda: ALONE)
    out = {}
    for pos, adv, ret, lp in zip(
        data["partition"], data["advantages"], data["returns"], data["log_probs"], strict=True
    ):
        assert adv.shape == lp.shape and adv.dtype == torch.float32  # one value per response token
        assert torch.equal(adv, torch.full_like(lp, float(adv[0]))) and torch.equal(ret, adv)
        out[pos] = float(adv[0])
    return out


@pytest.mark.parametrize("coef", [0.001, 0.5])
def test_matches_verls_formula_by_hand(coef: float) -> None:
    partition = [4, 0, 2, 5, 1, 3]  # slime packs by length: a rank's samples come in any order
    got = run_alone(slime_args(coef), rollout_data(partition))
    expected = by_hand(coef)
    assert [got[i] for i in range(6)] == pytest.approx(expected, abs=1e-6)


def test_the_penalty_changes_the_ranking_and_skips_tool_tokens() -> None:
    got = run_alone(slime_args(0.5), rollout_data(list(range(6))))
    values = [got[i] for i in range(6)]
    # Samples 0 and 2 have the same reward: only the KL term tells them apart.
    assert values[0] != pytest.approx(values[2], abs=1e-3)
    assert values != pytest.approx(by_hand(0.0), abs=1e-3)
    # Counting the masked tool tokens would give other advantages.
    assert values != pytest.approx(by_hand(0.5, masked=False), abs=1e-3)


@pytest.mark.parametrize("kind", ["abs", "mse"])
def test_other_penalty_types(kind: str) -> None:
    got = run_alone(slime_args(0.5, kind), rollout_data(list(range(6))))
    assert [got[i] for i in range(6)] == pytest.approx(by_hand(0.5, kind=kind), abs=1e-6)
    assert [got[i] for i in range(6)] != pytest.approx(by_hand(0.5), abs=1e-3)


def test_group_of_one_keeps_its_score() -> None:
    single = {**BATCH, "n": 1}
    got = run_alone(slime_args(0.5, n=1), rollout_data([3, 1, 0, 2, 5, 4]))
    expected = by_hand(0.5, single)  # mean 0, std 1: the score itself (÷ 1 + 1e-6)
    assert [got[i] for i in range(6)] == pytest.approx(expected, abs=1e-6)
    kl0 = (-0.5 + 0.7) + (-0.2 + 0.2)
    assert got[0] == pytest.approx((4.0 - 0.5 * kl0) / (1 + 1e-6), abs=1e-6)


def test_a_group_with_one_training_member_is_treated_as_a_group_of_one() -> None:
    # slime leaves samples that fill no global batch out of the step; they have no log-probs.
    got = run_alone(slime_args(0.5), rollout_data([0, 1, 2, 3]))
    assert [got[i] for i in range(3)] == pytest.approx(by_hand(0.5)[:3], abs=1e-6)
    kl3 = -0.7 + 0.2
    assert got[3] == pytest.approx((-3.0 - 0.5 * kl3) / (1 + 1e-6), abs=1e-6)


def test_rollout_logprobs_replace_the_actors_when_slime_uses_them() -> None:
    data = rollout_data(list(range(6)))
    data["rollout_log_probs"], data["log_probs"] = (
        data["log_probs"],
        [torch.zeros_like(t) for t in data["log_probs"]],
    )
    got = run_alone(slime_args(0.5, use_rollout_logprobs=True), data)
    assert [got[i] for i in range(6)] == pytest.approx(by_hand(0.5), abs=1e-6)


def test_missing_reference_log_probs_is_a_clear_error() -> None:
    data = rollout_data(list(range(6)))
    del data["ref_log_probs"]
    with pytest.raises(RuntimeError, match=r"ref_log_probs.*--kl-coef"):
        kl_in_reward_grpo(slime_args(0.001), data, topology=lambda: ALONE)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            SimpleNamespace(n_samples_per_prompt=3, kl_coef=0.01, t3rl={"kl_in_reward": {"coef": 0.001}}),
            "differs",
        ),
        (
            SimpleNamespace(n_samples_per_prompt=4, kl_coef=0.001, t3rl={"kl_in_reward": {"coef": 0.001}}),
            "groups",
        ),
        (
            SimpleNamespace(n_samples_per_prompt=3, kl_coef=0.001, t3rl={"kl_in_reward": None}),
            "no kl_in_reward",
        ),
    ],
)
def test_inconsistent_settings_are_refused(args: SimpleNamespace, words: str) -> None:
    data = rollout_data(list(range(6)))
    with pytest.raises(ValueError, match=words):
        kl_in_reward_grpo(args, data, topology=lambda: ALONE)


def test_mask_and_log_probs_of_different_lengths_are_refused() -> None:
    data = rollout_data(list(range(6)))
    data["loss_masks"][0] = torch.tensor([1], dtype=torch.int)  # would broadcast silently
    with pytest.raises(ValueError, match="loss mask"):
        kl_in_reward_grpo(slime_args(0.001), data, topology=lambda: ALONE)


def _gloo_rank(rank: int, init_file: str, coef: float, partitions: list[list[int]], out: str) -> None:
    """One rank of a real 2-process gloo group (forked: torch is already imported)."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=2)
    data = rollout_data(partitions[rank])
    kl_in_reward_grpo(slime_args(coef), data, topology=lambda: Topology(group=None, distributed=True))
    values = [float(a[0]) for a in data["advantages"]]
    Path(out).write_text(json.dumps({"partition": data["partition"], "advantages": values}))
    dist.destroy_process_group()


def test_two_gloo_ranks_with_split_groups_equal_one_process(tmp_path: Path) -> None:
    """Both prompt groups have members on both ranks; the all_reduce completes their statistics."""
    coef = 0.5
    partitions = [[0, 4, 2], [5, 1, 3]]
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(
            target=_gloo_rank,
            args=(rank, str(tmp_path / "store"), coef, partitions, str(tmp_path / f"out{rank}.json")),
        )
        for rank in range(2)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0, f"rank exited with {proc.exitcode}"
    got: dict[int, float] = {}
    for rank in range(2):
        result = json.loads((tmp_path / f"out{rank}.json").read_text())
        assert result["partition"] == partitions[rank]
        got |= dict(zip(result["partition"], result["advantages"], strict=True))
    alone = run_alone(slime_args(coef), rollout_data(list(range(6))))
    assert [got[i] for i in range(6)] == pytest.approx([alone[i] for i in range(6)], abs=1e-6)
    assert [got[i] for i in range(6)] == pytest.approx(by_hand(coef), abs=1e-6)
    # Without the all_reduce each rank would z-score its own members only: different numbers.
    local = run_alone(slime_args(coef), rollout_data(partitions[0]))
    assert [local[i] for i in partitions[0]] != pytest.approx([got[i] for i in partitions[0]], abs=1e-3)
