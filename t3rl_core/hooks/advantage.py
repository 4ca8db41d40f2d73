"""t3rl's advantage hooks for slime: veRL's KL-in-reward GRPO, and MT-GRPO's turn-level credit (the latter
documented at `turn_level_rewards`).

veRL's KL-in-reward GRPO (slime's --custom-advantage-function-path).

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
from t3rl_core.counts import counted
from t3rl_core.credit import TurnCreditConfig
from t3rl_core.hooks.failures import failure_of, metadata_of

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
            f"{counted(len(raw_reward), 'sample')} in the rollout batch do not form groups of "
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
    `present` members only (unbiased std, eps 1e-6; a group with one member: mean 0, std 1).

    A group of two or more whose scores reach past 2**500 is computed divided by its largest magnitude
    c, eps by c too, which is the same formula: its sums and squares overflowed (rewards of ±1e308 gave
    advantages of 0, equal ones of 1.7e308 NaN). The mean gets one corrective pass (the sum of the
    deviations from the first mean), so equal scores have z-scores of exactly 0 whatever their size."""
    import torch

    s = scores.view(-1, group_size)
    w = present.view(-1, group_size).to(s.dtype)
    count = w.sum(dim=1, keepdim=True)
    largest = torch.where(w > 0, s.abs(), torch.zeros_like(s)).amax(dim=1, keepdim=True)
    scale = torch.where((largest > 2.0**500) & (count > 1), largest, torch.ones_like(largest))
    s = s / scale
    members = count.clamp(min=1)
    mean = (s * w).sum(dim=1, keepdim=True) / members
    # The sum rounds (three scores of 3002399751580331.0 pass 2**53): equal scores had a mean one ulp
    # off and z-scores of ±0.82 instead of 0. One corrective pass gives their mean back exactly.
    mean = mean + ((s - mean) * w).sum(dim=1, keepdim=True) / members
    var = ((s - mean) ** 2 * w).sum(dim=1, keepdim=True) / (count - 1).clamp(min=1)
    alone = count <= 1
    mean = torch.where(alone, torch.zeros_like(mean), mean)
    std = torch.where(alone, torch.ones_like(var), var.sqrt())
    return ((s - mean) / (std + EPS / scale)).flatten()


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
    section = runtime_section(
        args,
        "kl_in_reward",
        "the KL-in-reward advantage hook runs, but the runtime config has no kl_in_reward section: "
        "set the curriculum's algorithm.kl_in_reward",
    )
    if isinstance(section, KlInRewardConfig):
        return section
    return _config_from_json(json.dumps(section, sort_keys=True))


def runtime_section(args: Any, key: str, missing: str) -> Any:
    """Section `key` of the runtime config on `args` (a model or its plain data); `missing` is the
    error when it is null."""
    data = getattr(args, RUNTIME_KEY, None)
    if isinstance(data, RuntimeConfig):
        section: Any = getattr(data, key)
    elif isinstance(data, dict):
        section = data.get(key)
    else:
        section = getattr(RuntimeConfig.from_slime_args(args), key)
    if section is None:
        raise ValueError(missing)
    return section


@lru_cache(maxsize=8)
def _config_from_json(text: str) -> KlInRewardConfig:
    return KlInRewardConfig.model_validate(json.loads(text))


# --------------------------------------------------------------------------------- turn-level credit


def turn_level_rewards(args: Any, samples: list[Any]) -> tuple[list[float], list[torch.Tensor]]:
    """slime's --custom-reward-post-process-path under algorithm.credit=turn: MT-GRPO's advantages of
    the whole rollout batch, one value per response token, in place of slime's group-normalised rewards.

    MT-GRPO (Zeng et al. 2025, arXiv 2505.11821, Eq. "Â^MT"): with R^O_i the episode's reward (the t3rl
    reward) and r_{i,k} the world's reward of turn k (outcome `turn_rewards`, None = not rewarded),
    within each prompt group G (n_samples_per_prompt consecutive samples, slime's order):

        Â^O_i   = (R^O_i − mean_G R^O) / (std_G R^O + 1e-6)
        Â^T_i,k = (r_i,k − mean r_·,k) / (std r_·,k + 1e-6)   over the members of G that have a turn k reward
        A_i,t   = Â^T_i,k + λ·Â^O_i   for a token t in a rewarded turn k of sample i
                = Â^O_i               for every other token (unrewarded turns, e.g. MT-GRPO's final one)

    std is unbiased; a group of one keeps its outcome score (veRL's GRPO); a turn index fewer than two
    members of a group reached gets no turn term (nothing to compare it with). A turn's tokens run from
    the model's first token of its first step to the next turn's first (observations, mask 0, included).
    Each token gets its own turn's term only, never a sum of normalised terms of later turns: the
    baseline of a token therefore does not depend on where its trajectory stopped, the construction
    verl #7244 shows to be biased when the policy controls termination; credit of later turns reaches
    earlier ones through Â^O alone.

    The statistics need the whole batch, which only the rollout side has, so they are computed here;
    the values travel to the training ranks as slime's per-sample `rewards` (split with the batch), and
    `turn_level_advantages` hands them to the loss. Returns slime's (raw_rewards, rewards).
    """
    import torch

    config = turn_credit_config(args)
    group = int(args.n_samples_per_prompt)
    if len(samples) % group:
        raise ValueError(
            f"{counted(len(samples), 'sample')} do not form groups of n_samples_per_prompt {group}"
        )
    records = [_turn_record(sample) for sample in samples]
    raw = [float(sample.reward) for sample in samples]
    outcome = group_zscore(
        torch.tensor(raw, dtype=torch.float64), torch.ones(len(raw), dtype=torch.bool), group
    )
    width = max((len(r["rewards"]) for r in records), default=0)
    turn = torch.full((len(samples), max(width, 1)), float("nan"), dtype=torch.float64)
    for i, record in enumerate(records):
        for k, value in enumerate(record["rewards"]):
            if value is not None:
                turn[i, k] = value
    present = ~turn.isnan()
    turn_adv = torch.zeros_like(turn)
    for k in range(turn.shape[1]):
        counts = present[:, k].view(-1, group).sum(dim=1).repeat_interleave(group)
        z = group_zscore(turn[:, k].nan_to_num(0.0), present[:, k], group)
        turn_adv[:, k] = torch.where(present[:, k] & (counts >= 2), z, torch.zeros_like(z))
    rewards = []
    for i, (sample, record) in enumerate(zip(samples, records, strict=True)):
        values = torch.full((int(sample.response_length),), float(outcome[i]), dtype=torch.float64)
        for k, (start, end) in enumerate(record["spans"]):
            if present[i, k]:
                values[start:end] = turn_adv[i, k] + config.outcome_weight * outcome[i]
        rewards.append(values.float())
    return raw, rewards


def turn_level_advantages(
    args: Any, rollout_data: dict[str, Any], *, topology: Callable[[], Topology] = megatron_topology
) -> None:
    """slime's advantage hook under algorithm.credit=turn: each local sample's per-token MT-GRPO
    advantages (computed over the batch by `turn_level_rewards`, arriving as its `rewards`), cut to the
    tokens this context-parallel rank holds."""
    import torch

    turn_credit_config(args)
    values = rollout_data["rewards"]
    lengths = [int(n) for n in rollout_data["response_lengths"]]
    for i, (value, length) in enumerate(zip(values, lengths, strict=True)):
        if not isinstance(value, torch.Tensor) or value.shape != (length,):
            raise ValueError(
                f"sample {i}: rewards {getattr(value, 'shape', value)!r} are not one advantage per response "
                f"token ({length}): algorithm.credit=turn needs --custom-reward-post-process-path "
                "t3rl_core.hooks.advantage.turn_level_rewards, which the plan adds"
            )
    cp_size = topology().cp_size
    if cp_size > 1:
        from slime.backends.megatron_utils.cp_utils import slice_log_prob_with_cp

        values = [
            slice_log_prob_with_cp(value, total, length)
            for value, total, length in zip(values, rollout_data["total_lengths"], lengths, strict=True)
        ]
    masks = _local_masks(rollout_data, cp_size)
    advantages = []
    for i, (value, mask) in enumerate(zip(values, masks, strict=True)):
        if value.shape != mask.shape:
            raise ValueError(f"sample {i}: advantages {tuple(value.shape)} vs loss mask {tuple(mask.shape)}")
        advantages.append(value.to(torch.float32))
    rollout_data["advantages"] = advantages
    rollout_data["returns"] = list(advantages)


def _turn_record(sample: Any) -> dict[str, Any]:
    record = metadata_of(sample).get("turn_credit")
    if record is None and failure_of(sample) is not None:
        # A failed episode (no outcome, no turns): removed with its group and counted by the log hook
        # against rollout.max_failure_rate, which decides whether the run goes on; no turn term.
        return {"rewards": [], "spans": []}
    if record is None:
        raise ValueError(
            "a sample has no turn rewards (metadata.turn_credit): algorithm.credit=turn needs a world whose "
            "outcome reports turn_rewards and turn_steps, played by t3rl_core.hooks.slime.generate"
        )
    if len(record["spans"]) != len(record["rewards"]):
        raise ValueError(f"{len(record['rewards'])} turn rewards for {len(record['spans'])} turn spans")
    return record


def turn_credit_config(args: Any) -> TurnCreditConfig:
    """The `turn_credit` section of the runtime config on `args`."""
    section = runtime_section(
        args,
        "turn_credit",
        "the turn-level credit hooks run, but the runtime config has no turn_credit section: set the "
        "curriculum's algorithm.credit=turn",
    )
    return section if isinstance(section, TurnCreditConfig) else TurnCreditConfig.model_validate(section)
