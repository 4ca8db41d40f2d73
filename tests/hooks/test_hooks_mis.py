"""The TIS hook on CPU with real torch tensors against hand-computed values (single process, CP = 1)."""

import math
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest

from t3rl_core.hooks.mis import compute_mis_weights_with_cp

if TYPE_CHECKING:
    import torch


# torch: bound by tests/hooks/conftest.py when the tests run, not imported at collection.
pytestmark = pytest.mark.usefixtures("torch_in_module")


LN2 = math.log(2.0)


def _batch():
    # Sequence 0: ratios ρ = 2, (1, masked out), 0.5; sequence 1: ρ = 2.
    train = [torch.log(torch.tensor([0.5, 0.25, 0.5])), torch.log(torch.tensor([0.8]))]
    rollout = [torch.log(torch.tensor([0.25, 0.25, 1.0])), torch.log(torch.tensor([0.4]))]
    masks = [torch.tensor([1, 0, 1]), torch.tensor([1])]
    return train, rollout, masks


def _call(use_tis, **mis):
    train, rollout, masks = _batch()
    args = SimpleNamespace(use_tis=use_tis, t3rl={"mis": mis})
    pg_loss = torch.ones(4, requires_grad=True)
    out = compute_mis_weights_with_cp(
        args,
        pg_loss=pg_loss,
        train_log_probs=train,
        rollout_log_probs=rollout,
        loss_masks=masks,
        total_lengths=[10, 5],
        response_lengths=[3, 1],
    )
    return pg_loss, masks, out


def test_metrics_only_leaves_loss_and_masks_alone():
    pg_loss, masks, (new_loss, new_masks, metrics) = _call(False)
    assert new_loss is pg_loss
    assert all(a is b for a, b in zip(new_masks, masks, strict=True))
    assert all(name.startswith("mis_") for name in metrics)
    assert all(value.shape == (4,) for value in metrics.values())  # one entry per local response token
    assert metrics["mis_ratio"] == pytest.approx(torch.tensor([2.0, 1.0, 0.5, 2.0]))
    k3_up, k3_down = 1 - LN2, 0.5 - 1 + LN2  # ρ − 1 − log ρ for ρ = 2 and ρ = 0.5
    assert metrics["mis_k3_kl"][[0, 2, 3]] == pytest.approx(torch.tensor([k3_up, k3_down, k3_up]))
    assert metrics["mis_k1_kl"][[0, 2]] == pytest.approx(torch.tensor([-LN2, LN2]))
    # Sequence metrics repeat one value over the sequence's tokens.
    assert metrics["mis_seq_log_ratio"] == pytest.approx(torch.tensor([0.0, 0.0, 0.0, LN2]), abs=1e-6)
    assert metrics["mis_training_ppl"] == pytest.approx(torch.tensor([2.0, 2.0, 2.0, 1.25]))
    assert metrics["mis_rollout_ppl"] == pytest.approx(torch.tensor([2.0, 2.0, 2.0, 2.5]))
    assert metrics["mis_log_ppl_diff"][3] == pytest.approx(math.log(1.25 / 2.5))
    assert metrics["mis_ratio_max"][0] == pytest.approx(2.0) and metrics["mis_ratio_min"][0] == pytest.approx(
        0.5
    )


def test_token_truncate_with_batch_normalisation():
    _, _, (loss, masks, metrics) = _call(True, tis_level="token", tis_mode="truncate", tis_upper_bound=1.5)
    norm = (1.5 + 0.5 + 1.5) / 3  # mean truncated weight over the three trainable tokens
    expected = torch.tensor([1.5 / norm, 0.0, 0.5 / norm, 1.5 / norm])
    assert loss.detach() == pytest.approx(expected)
    assert loss.requires_grad  # weights scale the loss; gradients still flow through pg_loss
    assert metrics["mis_tis_above_upper"].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert metrics["mis_tis_batch_norm_factor"][0] == pytest.approx(norm)
    assert [m.tolist() for m in masks] == [[1, 0, 1], [1]]


def test_sequence_clip_without_normalisation():
    _, _, (loss, _, metrics) = _call(
        True,
        tis_level="sequence",
        tis_mode="clip",
        tis_lower_bound=0.5,
        tis_upper_bound=1.5,
        tis_batch_normalize=False,
    )
    # Sequence 0: Π ρ over trainable tokens = 2 · 0.5 = 1; sequence 1: 2, clipped to 1.5.
    assert loss.detach() == pytest.approx(torch.tensor([1.0, 0.0, 1.0, 1.5]))
    assert metrics["mis_tis_weight_raw"] == pytest.approx(torch.tensor([1.0, 1.0, 1.0, 2.0]))


def test_geometric_mask_rejects_whole_sequences():
    _, _, (loss, masks, _) = _call(
        True, tis_level="geometric", tis_mode="mask", tis_lower_bound=0.6, tis_upper_bound=1.8
    )
    # Geometric means: sequence 0 → 1 (kept), sequence 1 → 2 (outside [0.6, 1.8] → masked out).
    assert [m.tolist() for m in masks] == [[1, 0, 1], [0]]
    assert loss.detach()[[0, 2]] == pytest.approx(torch.tensor([1.0, 1.0]))


def test_bad_bounds_and_shapes_are_errors():
    with pytest.raises(ValueError, match="must be > tis_lower_bound"):
        _call(True, tis_lower_bound=2.0, tis_upper_bound=1.0)
    args = SimpleNamespace(use_tis=False, t3rl={"mis": {}})
    with pytest.raises(ValueError, match="sequence 0"):
        compute_mis_weights_with_cp(
            args,
            pg_loss=torch.ones(2),
            train_log_probs=[torch.zeros(2)],
            rollout_log_probs=[torch.zeros(3)],
            loss_masks=[torch.ones(2)],
            total_lengths=[4],
            response_lengths=[2],
        )
