"""Train/inference mismatch metrics and truncated importance sampling (slime's --custom-tis-function-path).

slime calls `compute_mis_weights_with_cp` inside its policy loss when `--get-mismatch-metrics` or
`--use-tis` is set. With ρ_t = π_train(y_t) / π_rollout(y_t) for a response token sampled by the
rollout engine, and log ρ_t = train_log_prob − rollout_log_prob:

- token metrics: log ρ, |log ρ|, ρ, the k1 estimate −log ρ and the k3 estimate ρ − 1 − log ρ (≥ 0) of
  KL(π_rollout ‖ π_train);
- sequence metrics (one value per sequence, repeated over its tokens so slime's per-sample mean
  reducer averages them over sequences): Σ log ρ, both perplexities exp(−mean log p) and their log
  difference / ratio, min and max ρ.

With `args.use_tis` the policy-gradient loss is reweighted by w, from `RuntimeConfig.mis`:
  level   token: w_t = ρ_t;  sequence: w = Π ρ_t;  geometric: w = (Π ρ_t)^(1/T)  (over trainable tokens)
  mode    truncate: min(w, upper);  clip: clamp(w, lower, upper);
          mask: w kept, tokens (or whole sequences, at sequence levels) with w outside [lower, upper]
          are dropped from the loss mask
  tis_batch_normalize: divide w by its mean over the micro-batch's trainable tokens (token level) or
          sequences (sequence levels), so the loss scale is unchanged on average.
log ρ is clamped to ±20 before exponentiation. Weights are constants (no gradient flows through them).
Level, mode and bounds come from the runtime config's `mis` section; slime's own --tis-clip and
--tis-clip-low belong to its built-in TIS function and are not read here.

Context parallelism: with CP > 1 slime hands each rank only its two chunks of every response (the
loss masks stay whole). Sequence quantities need whole responses, so the log-probs are all-gathered
over the CP group with slime's own helpers (the exact chunk layout is slime's), and weights and
metrics are sliced back to this rank's chunks. That path runs only when torch.distributed is
initialised and Megatron reports a CP world size above 1; otherwise everything is local.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from t3rl_core.config import RUNTIME_KEY, MisConfig, RuntimeConfig

if TYPE_CHECKING:
    import torch

LOG_RATIO_BOUND = 20.0
PREFIX = "mis_"


def compute_mis_weights_with_cp(
    args: Any,
    *,
    pg_loss: torch.Tensor,
    train_log_probs: list[torch.Tensor],
    rollout_log_probs: list[torch.Tensor],
    loss_masks: list[torch.Tensor],
    total_lengths: list[int],
    response_lengths: list[int],
    **_: Any,
) -> tuple[torch.Tensor, list[torch.Tensor], dict[str, torch.Tensor]]:
    """slime's TIS hook: returns (reweighted pg_loss, loss masks, metrics as flat per-token tensors)."""
    import torch

    config = mis_config(args)
    cp = _ContextParallel(total_lengths, response_lengths)
    with torch.no_grad():
        train = [cp.gather(t.detach().float(), i) for i, t in enumerate(train_log_probs)]
        rollout = [
            cp.gather(r.detach().float().to(t.device), i)
            for i, (r, t) in enumerate(zip(rollout_log_probs, train, strict=True))
        ]
        masks = [m.to(t.device).float() for m, t in zip(loss_masks, train, strict=True)]
        for i, (t, r, m) in enumerate(zip(train, rollout, masks, strict=True)):
            if not t.shape == r.shape == m.shape:
                raise ValueError(
                    f"sequence {i}: train {tuple(t.shape)}, rollout {tuple(r.shape)}, mask {tuple(m.shape)}"
                )
        metrics = mismatch_metrics(train, rollout, masks)
        out_masks: list[torch.Tensor] = list(loss_masks)
        local_weights = None
        if getattr(args, "use_tis", False):
            weights, kept, tis_metrics = importance_weights(config, train, rollout, masks)
            metrics |= tis_metrics
            local_weights = torch.cat([cp.local(w, i) for i, w in enumerate(weights)]).to(pg_loss.dtype)
            if config.tis_mode == "mask":
                out_masks = [k.to(m.dtype) for k, m in zip(kept, loss_masks, strict=True)]
    if local_weights is not None:
        # Outside no_grad: the loss keeps its graph; the weights are constants.
        pg_loss = pg_loss * local_weights
    flat = {
        PREFIX + name: torch.cat([cp.local(v, i) for i, v in enumerate(values)])
        for name, values in metrics.items()
    }
    return pg_loss, out_masks, flat


def mismatch_metrics(
    train: list[torch.Tensor], rollout: list[torch.Tensor], masks: list[torch.Tensor]
) -> dict[str, list[torch.Tensor]]:
    """Per-sequence tensors (each as long as its response) of every mismatch metric."""
    import torch

    metrics: dict[str, list[torch.Tensor]] = {}
    for t, r, m in zip(train, rollout, masks, strict=True):
        log_ratio = t - r
        ratio = torch.exp(log_ratio.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND))
        train_log_ppl = -_masked_mean(t, m)
        rollout_log_ppl = -_masked_mean(r, m)
        values = {
            "log_ratio": log_ratio,
            "abs_log_ratio": log_ratio.abs(),
            "ratio": ratio,
            "k1_kl": -log_ratio,
            "k3_kl": ratio - 1.0 - log_ratio,
            "seq_log_ratio": _full((log_ratio * m).sum(), m),
            "training_log_ppl": _full(train_log_ppl, m),
            "rollout_log_ppl": _full(rollout_log_ppl, m),
            "training_ppl": _full(torch.exp(train_log_ppl), m),
            "rollout_ppl": _full(torch.exp(rollout_log_ppl), m),
            "log_ppl_diff": _full(train_log_ppl - rollout_log_ppl, m),
            "ppl_ratio": _full(torch.exp(train_log_ppl - rollout_log_ppl), m),
            "ratio_max": _full(_masked_extreme(ratio, m, torch.max), m),
            "ratio_min": _full(_masked_extreme(ratio, m, torch.min), m),
        }
        for name, value in values.items():
            metrics.setdefault(name, []).append(value)
    return metrics


def importance_weights(
    config: MisConfig, train: list[torch.Tensor], rollout: list[torch.Tensor], masks: list[torch.Tensor]
) -> tuple[list[torch.Tensor], list[torch.Tensor], dict[str, list[torch.Tensor]]]:
    """(weights, kept masks, metrics) per sequence; weights are 0 outside the loss mask."""
    import torch

    lower, upper = config.tis_lower_bound, config.tis_upper_bound
    weights, kept_masks = [], []
    metrics: dict[str, list[torch.Tensor]] = {}

    def record(name: str, value: torch.Tensor) -> None:
        metrics.setdefault(name, []).append(value.float())

    for t, r, m in zip(train, rollout, masks, strict=True):
        log_ratio = t - r
        if config.tis_level == "sequence":
            log_w = _full((log_ratio * m).sum(), m)
        elif config.tis_level == "geometric":
            log_w = _full(_masked_mean(log_ratio, m), m)
        else:
            log_w = log_ratio
        raw = torch.exp(log_w.clamp(-LOG_RATIO_BOUND, LOG_RATIO_BOUND))
        record("tis_weight_raw", raw)
        record("tis_above_upper", raw > upper)
        record("tis_below_lower", raw < lower)
        kept = m
        if config.tis_mode == "truncate":
            w = raw.clamp(max=upper)
        elif config.tis_mode == "clip":
            w = raw.clamp(lower, upper)
        else:
            w = raw
            kept = m * ((raw >= lower) & (raw <= upper)).float()
        weights.append(w * m)
        kept_masks.append(kept)

    if config.tis_batch_normalize:
        if config.tis_level == "token":
            total = sum((w * k).sum() for w, k in zip(weights, kept_masks, strict=True))
            count = sum(k.sum() for k in kept_masks)
        else:
            per_sequence = [
                _masked_mean(w, k) for w, k in zip(weights, kept_masks, strict=True) if k.sum() > 0
            ]
            total, count = sum(per_sequence), len(per_sequence)
        mean = torch.as_tensor(total / count if count else 0.0, dtype=torch.float32)
        factor = mean if mean > 1e-8 else torch.ones(())
        weights = [w / factor for w in weights]
        for w in weights:
            record("tis_batch_norm_factor", _full(factor, w))
    for w in weights:
        record("tis_weight", w)
    return weights, kept_masks, metrics


@lru_cache(maxsize=8)
def _mis_from_json(text: str) -> MisConfig:
    return MisConfig.model_validate(json.loads(text))


def mis_config(args: Any) -> MisConfig:
    """The `mis` section of the runtime config on `args` (validated once per distinct value)."""
    data = getattr(args, RUNTIME_KEY, None)
    if isinstance(data, RuntimeConfig):
        return data.mis
    if isinstance(data, dict):
        return _mis_from_json(json.dumps(data.get("mis") or {}, sort_keys=True))
    return RuntimeConfig.from_slime_args(args).mis


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def _masked_extreme(x: torch.Tensor, mask: torch.Tensor, reduce: Any) -> torch.Tensor:
    chosen = x[mask.bool()]
    return reduce(chosen) if chosen.numel() else x.new_zeros(())


def _full(value: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return value.expand_as(like).clone()


class _ContextParallel:
    """Whole-response views of CP-sharded log-probs and the way back to this rank's shard."""

    def __init__(self, total_lengths: list[int], response_lengths: list[int]) -> None:
        self.total_lengths, self.response_lengths = total_lengths, response_lengths
        self.active = _cp_world_size() > 1

    def gather(self, shard: torch.Tensor, i: int) -> torch.Tensor:
        if not self.active:
            return shard
        from slime.backends.megatron_utils.cp_utils import all_gather_with_cp

        return all_gather_with_cp(shard, self.total_lengths[i], self.response_lengths[i])

    def local(self, full: torch.Tensor, i: int) -> torch.Tensor:
        if not self.active:
            return full
        from slime.backends.megatron_utils.cp_utils import slice_log_prob_with_cp

        return slice_log_prob_with_cp(full, self.total_lengths[i], self.response_lengths[i])


def _cp_world_size() -> int:
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return 1
    try:
        from megatron.core import mpu
    except ImportError:
        return 1
    return mpu.get_context_parallel_world_size()
