"""veRL's KL-in-reward GRPO for slime (slime's --custom-advantage-function-path).

ToolRL trains with veRL's GRPO with the KL term out of the loss and in the reward (`use_kl_loss=False`,
`apply_kl_penalty` with a fixed coefficient β): every response token's reward is −β·kl_t, the outcome
score sits on the last token, and GRPO's score is the sum of the token rewards. For sample i of
prompt group g, with loss mask m (tool observations excluded) and d_t = log π(y_t) − log π_ref(y_t):

    s_i = R_i − β · Σ_t kl(d_t) · m_t         kl(d) = d (type kl), |d| (abs), d²/2 (mse)
    A_i = (s_i − mean_g s) / (std_g s + 1e-6)  unbiased std; a group of one: mean 0, std 1

and A_i is the advantage (and return) of every response token of sample i. slime's built-in GRPO
cannot do this: its rollout manager z-scores the rewards before any log-prob exists, and its GRPO
returns ignore --kl-coef. The plan passes `--kl-coef β` anyway: it is what makes slime load the
reference model and compute `log_probs` and `ref_log_probs` before calling this hook.

What slime hands the hook, per data-parallel rank (slime/backends/megatron_utils/actor.py and
loss.py, slime/utils/data.py, slime/ray/rollout.py):
- `raw_reward`: the rewards of the WHOLE rollout batch in its flattened order (the local `rewards`
  are already group-normalised by the rollout manager, so they are not used);
- `partition`: this rank's samples' positions in that order;
- `log_probs`, `ref_log_probs` (this rank's, and under context parallelism this CP rank's chunks of
  each response), `loss_masks` (whole responses), `total_lengths`, `response_lengths`.
A prompt group is `n_samples_per_prompt` consecutive positions (slime's reward normalisation assumes
the same). slime packs micro-batches by length, so a group's members can sit on different DP ranks:
each rank writes its partial KL sums at its positions of a batch-sized vector and one all_reduce over
the data-parallel group with context parallelism completes every sum. A sample slime leaves out of the
step (trailing rollouts that fill no global batch) has no log-probs; its group is z-scored over the
members that train.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from t3rl_core.config import RUNTIME_KEY, KlInRewardConfig, RuntimeConfig

if TYPE_CHECKING:
    import torch

EPS = 1e-6


@dataclass(frozen=True)
class Topology:
    """The ranks that share one rollout batch: their process group and context-parallel size."""

    # torch.distributed process group of the all_reduce (None = the default group).
    group: Any = None
    distributed: bool = False
    cp_size: int = 1


def megatron_topology() -> Topology:
    """Megatron's data-parallel group with context parallelism (one process alone when not distributed)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return Topology()
    from megatron.core import mpu

    return Topology(
        group=mpu.get_data_parallel_group(with_context_parallel=True),
        distributed=True,
        cp_size=mpu.get_context_parallel_world_size(),
    )


def kl_in_reward_grpo(
    args: Any, rollout_data: dict[str, Any], *, topology: Callable[[], Topology] = megatron_topology
) -> None:
    """slime's advantage hook: sets `rollout_data["advantages"]` and `["returns"]` (per local sample,
    one value per local response token)."""
    import torch

    config = kl_config(args)
    slime_coef = getattr(args, "kl_coef", config.coef)
    if slime_coef != config.coef:
        raise ValueError(
            f"--kl-coef {slime_coef} differs from the runtime config's kl_in_reward.coef {config.coef}: "
            "plan the stage again instead of editing its argv"
        )
    log_probs, ref_log_probs = _log_probs(args, rollout_data)
    partition = [int(p) for p in rollout_data["partition"]]
    raw_reward = rollout_data["raw_reward"]
    group_size = int(args.n_samples_per_prompt)
    if len(raw_reward) % group_size:
        raise ValueError(
            f"{len(raw_reward)} samples in the rollout batch do not form groups of "
            f"n_samples_per_prompt {group_size}"
        )
    topo = topology()
    masks = _local_masks(rollout_data, topo.cp_size)
    for i, (lp, m) in enumerate(zip(log_probs, masks, strict=True)):
        if lp.shape != m.shape:
            raise ValueError(f"sample {i}: log-probs {tuple(lp.shape)} vs loss mask {tuple(m.shape)}")
    with torch.no_grad():
        partial = [
            _penalty(lp.float(), ref.to(lp.device).float(), config.type).mul(m.to(lp.device)).sum()
            for lp, ref, m in zip(log_probs, ref_log_probs, masks, strict=True)
        ]
        device = log_probs[0].device if log_probs else torch.device("cpu")
        # Row 0: KL sums at this rank's positions; row 1: how many ranks wrote each position.
        totals = torch.zeros(2, len(raw_reward), dtype=torch.float64, device=device)
        if partition:
            index = torch.tensor(partition, device=device)
            totals[0, index] = torch.stack(partial).to(torch.float64)
            totals[1, index] = 1.0
        if topo.distributed:
            import torch.distributed as dist

            dist.all_reduce(totals, op=dist.ReduceOp.SUM, group=topo.group)
        writers = totals[1]
        if bool(((writers != 0) & (writers != topo.cp_size)).any()):
            raise RuntimeError(
                f"a sample's KL sum came from {sorted(set(writers.tolist()))} ranks, expected {topo.cp_size} "
                "(one DP rank × its CP ranks): the rollout batch's partitions overlap"
            )
        rewards = torch.as_tensor([float(r) for r in raw_reward], dtype=torch.float64, device=device)
        scores = rewards - config.coef * totals[0]
        advantage = group_zscore(scores, writers > 0, group_size)
        advantages = [
            torch.full_like(lp, float(advantage[pos]), dtype=torch.float32)
            for lp, pos in zip(log_probs, partition, strict=True)
        ]
    rollout_data["advantages"] = advantages
    rollout_data["returns"] = list(advantages)


def group_zscore(scores: torch.Tensor, present: torch.Tensor, group_size: int) -> torch.Tensor:
    """veRL's GRPO normalisation of `scores` within consecutive groups of `group_size`, over the
    `present` members only (unbiased std, eps 1e-6; a group with one member: mean 0, std 1)."""
    import torch

    s = scores.view(-1, group_size)
    w = present.view(-1, group_size).to(s.dtype)
    count = w.sum(dim=1, keepdim=True)
    mean = (s * w).sum(dim=1, keepdim=True) / count.clamp(min=1)
    var = ((s - mean) ** 2 * w).sum(dim=1, keepdim=True) / (count - 1).clamp(min=1)
    alone = count <= 1
    mean = torch.where(alone, torch.zeros_like(mean), mean)
    std = torch.where(alone, torch.ones_like(var), var.sqrt())
    return ((s - mean) / (std + EPS)).flatten()


def _penalty(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, kind: str) -> torch.Tensor:
    diff = log_probs - ref_log_probs
    if kind == "abs":
        return diff.abs()
    if kind == "mse":
        return 0.5 * diff.square()
    return diff


def _log_probs(args: Any, rollout_data: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The actor's (or, with --use-rollout-logprobs, the rollout's) and the reference's log-probs."""
    key = "rollout_log_probs" if getattr(args, "use_rollout_logprobs", False) else "log_probs"
    log_probs, ref = rollout_data.get(key), rollout_data.get("ref_log_probs")
    if log_probs is None or ref is None:
        missing = [name for name, value in ((key, log_probs), ("ref_log_probs", ref)) if value is None]
        raise RuntimeError(
            f"the KL-in-reward advantage hook needs {' and '.join(missing)}: slime computes them when "
            "a reference model is loaded (--kl-coef > 0 with --ref-load), which t3rl plans from "
            "algorithm.kl_in_reward"
        )
    for i, (lp, r) in enumerate(zip(log_probs, ref, strict=True)):
        if lp.shape != r.shape:
            raise ValueError(f"sample {i}: {key} {tuple(lp.shape)} vs ref_log_probs {tuple(r.shape)}")
    return log_probs, ref


def _local_masks(rollout_data: dict[str, Any], cp_size: int) -> list[Any]:
    """Loss masks cut to the response tokens whose log-probs this rank holds."""
    masks = list(rollout_data["loss_masks"])
    if cp_size > 1:
        from slime.backends.megatron_utils.cp_utils import slice_log_prob_with_cp

        masks = [
            slice_log_prob_with_cp(m, total, response)
            for m, total, response in zip(
                masks, rollout_data["total_lengths"], rollout_data["response_lengths"], strict=True
            )
        ]
    return masks


def kl_config(args: Any) -> KlInRewardConfig:
    """The `kl_in_reward` section of the runtime config on `args` (validated once per distinct value)."""
    data = getattr(args, RUNTIME_KEY, None)
    if isinstance(data, RuntimeConfig):
        section: Any = data.kl_in_reward
    elif isinstance(data, dict):
        section = data.get("kl_in_reward")
    else:
        section = RuntimeConfig.from_slime_args(args).kl_in_reward
    if section is None:
        raise ValueError(
            "the KL-in-reward advantage hook runs, but the runtime config has no kl_in_reward section: "
            "set the curriculum's algorithm.kl_in_reward"
        )
    if isinstance(section, KlInRewardConfig):
        return section
    return _config_from_json(json.dumps(section, sort_keys=True))


@lru_cache(maxsize=8)
def _config_from_json(text: str) -> KlInRewardConfig:
    return KlInRewardConfig.model_validate(json.loads(text))
