"""Tau2-RL-Pipeline's reward shaping, curriculum weighting and group normalisation, as typed fields.

Per episode (`Tau2ShapedReward.__call__`), from the env's outcome:
    partial = Σ_present w_c·s_c / Σ_present w_c     (0 when no component is present or Σ w ≤ 0)
    α       = alpha · alpha_multipliers[domain]    (multiplier 1 for a domain not listed)
    shaped  = task_reward + α · partial             ∈ [0, 1 + α]
where s_c are tau2's check fractions (action, communicate, env_assertion, db; see
`t3rl_core.envs.tau2.env.partial_components`) and w_c the weights of the domain.

Per rollout batch (`Tau2ShapedReward.post_process`, slime's --custom-reward-post-process-path via
`reward_post_process`), in sample order:
    curriculum (per domain/task id; the pipeline keys on the bare id, which repeats across domains):
      attempts[t] += 1, successes[t] += (task_reward ≥ 1) — before the weight, so a sample counts
      itself; weight = 1 while attempts < min_attempts, else solved_weight when successes/attempts >
      solved_above, hard_weight when < hard_below, else 1;
    removed samples (slime's remove_sample): shaped 0, weight 0, left out of group statistics;
    grpo / gspo / reinforce_plus_plus_baseline with reward normalisation: per group of
      n_samples_per_prompt, μ = mean over valid samples, c = (shaped − μ)·valid, and for grpo/gspo
      with std normalisation c /= sqrt(Σ c² / n_valid) + 1e-6; then c · weight;
    otherwise: shaped · weight.
With `curriculum.apply: false` the weights are computed and logged but not multiplied in.

Rejection-sampling fine-tuning (the pipeline's RFT step, online): the RFT curriculum passes
`rejection_sampling_filter` as slime's dynamic sampling filter. Per prompt group it keeps the
successes (task_reward ≥ success_threshold) or, when there are none, the single best attempt by
partial score if that reaches fallback_partial; groups with nothing kept are dropped (slime samples
more), and the post-process then returns 1 for kept samples and 0 for the rest, unnormalised — the
policy gradient of supervised fine-tuning on the kept on-policy samples.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import sqrt
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from t3rl_core.config import RewardConfig
from t3rl_core.counts import counted
from t3rl_core.envs.tau2.config import Tau2Domain
from t3rl_core.fields import AtMost, Probability
from t3rl_core.finite import MissingScore, outside_real, scored, shown
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult, RewardWeight
from t3rl_core.strict import StrictModel

# Where the hooks store a sample's reward metrics, and where the RFT filter leaves its verdict.
REWARD_METRICS_KEY = "reward_metrics"
RFT_KEEP_KEY = "rft_keep"
GROUP_NORMALIZED = frozenset({"grpo", "gspo", "reinforce_plus_plus_baseline"})
STD_NORMALIZED = frozenset({"grpo", "gspo"})
STD_EPS = 1e-6


class PartialWeights(StrictModel):
    """Weights of tau2's check fractions in the partial score (only present components count)."""

    # The partial score is the weights' mean (divided by their sum): pre-flight refuses all of them 0,
    # which leaves no mean and scores every episode's partial 0 (launch/checks/rules/weights.py).
    WEIGHTS_OF_A_MEAN: ClassVar[bool] = True

    action: RewardWeight = 0.5
    communicate: RewardWeight = 0.15
    env_assertion: RewardWeight = 0.35
    db: RewardWeight = 0.0


class CurriculumWeighting(StrictModel):
    """Down-weights tasks the policy has mostly solved or mostly failed (per task id, per process)."""

    enabled: bool = True
    # Multiply the rewards by the weights (false: compute and log them only).
    apply: bool = True
    min_attempts: int = Field(5, ge=1)
    solved_above: Probability = 0.75
    solved_weight: RewardWeight = 0.1
    # Success rates below this are hard; the two ranges do not overlap (solved is tested first).
    hard_below: Annotated[Probability, AtMost("solved_above")] = 0.25
    hard_weight: RewardWeight = 0.5


class RejectionSampling(StrictModel):
    """What the RFT filter keeps of a prompt group."""

    # tau2's task reward is in [0, 1]; a threshold of 0 would keep every attempt.
    success_threshold: float = Field(1.0, gt=0, le=1)
    # A group without a success keeps its best attempt when its partial score (in [0, 1]) reaches this.
    fallback_partial: Probability = 0.6


def _telecom_weights() -> dict[Tau2Domain, PartialWeights]:
    return {"telecom": PartialWeights(action=0.35, communicate=0.35, env_assertion=0.30, db=0.0)}


class Tau2RewardConfig(RewardConfig):
    """The pipeline's defaults (tau2.md A2); every environment switch of its code is a field here."""

    # Read with .get() defaults: on an env without them every episode would silently score 0.
    NEEDS_OUTCOME = frozenset({"domain", "task_reward", "partial_components"})

    name: Literal["tau2_shaped"] = "tau2_shaped"
    alpha: RewardWeight = 0.25
    alpha_multipliers: dict[Tau2Domain, RewardWeight] = Field(
        default_factory=lambda: {"retail": 0.8, "airline": 1.0, "telecom": 1.6}
    )
    partial_weights: PartialWeights = PartialWeights()
    domain_partial_weights: dict[Tau2Domain, PartialWeights] = Field(default_factory=_telecom_weights)
    # A task counts as solved (curriculum, accuracy) when its reward (in [0, 1]) reaches this.
    success_threshold: float = Field(1.0, gt=0, le=1)
    curriculum: CurriculumWeighting = CurriculumWeighting()
    rejection_sampling: RejectionSampling = RejectionSampling()

    # slime hooks this reward needs beside t3rl's generate hook, for the slime argv builder.
    slime_reward_post_process: ClassVar[str] = "t3rl_core.rewards.tau2.reward_post_process"


# ------------------------------------------------------------------------------------ per episode


class Tau2ShapedReward(Reward):
    """`shaped = task_reward + α(domain) · partial`; holds the process-local curriculum statistics."""

    def __init__(self, config: Tau2RewardConfig) -> None:
        self.config = config
        self.curriculum = TaskCurriculum(config.curriculum, config.success_threshold)

    def alpha(self, domain: str | None) -> float:
        return self.config.alpha * self.config.alpha_multipliers.get(domain or "", 1.0)

    def weights(self, domain: str | None) -> PartialWeights:
        return self.config.domain_partial_weights.get(domain or "", self.config.partial_weights)

    def partial(self, components: Mapping[str, float], domain: str | None) -> float:
        weights = self.weights(domain).model_dump()
        present = [name for name in components if name in weights]
        total = sum(weights[name] for name in present)
        if total <= 0:
            return 0.0
        return sum(weights[name] * float(components[name]) for name in present) / total

    def bounds(self, inp: RewardInput) -> tuple[float, float]:
        """tau2's reward and each partial component are in [0, 1]: shaped is in [0, 1 + α(domain)]."""
        return 0.0, 1.0 + self.alpha(inp.outcome.get("domain"))

    def __call__(self, inp: RewardInput) -> RewardResult:
        outcome = inp.outcome
        domain = outcome.get("domain")
        # The world's score, read strictly: a missing task_reward (None, NaN, no key: a world that never
        # scored the episode) is this reward's failure, recorded with the episode, never a 0.
        source = f"the outcome of tau2 task {outcome.get('task_id')!r}"
        task_reward = scored(outcome, "task_reward", source)
        components = outcome.get("partial_components")
        if not isinstance(components, Mapping):
            raise MissingScore(f"{source}: 'partial_components' is no mapping, got {shown(components)}")
        components = {str(name): scored(components, name, f"{source}: partial") for name in components}
        partial = self.partial(components, domain)
        alpha = self.alpha(domain)
        shaped = task_reward + alpha * partial
        metrics = {
            "accuracy": float(task_reward >= self.config.success_threshold),
            "task_reward": task_reward,
            "partial_score": partial,
            "alpha": alpha,
            **{f"partial_{name}": float(value) for name, value in components.items()},
        }
        return RewardResult(value=shaped, metrics=metrics)

    # ---------------------------------------------------------------------------------- per batch

    def post_process(self, samples: Sequence[ScoredSample], norm: Normalization) -> PostProcessed:
        """The rewards slime trains on, for a rollout batch in slime's order (groups contiguous)."""
        labels = {sample.rft_keep is None for sample in samples}
        if len(labels) > 1:
            raise ValueError("some samples of the batch went through the RFT filter and some did not")
        if samples and samples[0].rft_keep is not None:
            rewards = [1.0 if sample.rft_keep and not sample.removed else 0.0 for sample in samples]
            return PostProcessed(rewards, [1.0] * len(samples))
        weights = [0.0 if s.removed else self.curriculum.observe(s.task_id, s.task_reward) for s in samples]
        shaped = [0.0 if s.removed else s.shaped for s in samples]
        apply = self.config.curriculum.enabled and self.config.curriculum.apply
        if norm.advantage_estimator in GROUP_NORMALIZED and norm.rewards_normalization:
            std = norm.advantage_estimator in STD_NORMALIZED and norm.grpo_std_normalization
            valid = [not s.removed for s in samples]
            centered = group_normalize(shaped, valid, norm.group_size, std=std)
            rewards = [c * w for c, w in zip(centered, weights, strict=True)] if apply else centered
        else:
            rewards = [r * w for r, w in zip(shaped, weights, strict=True)] if apply else shaped
        return PostProcessed(rewards, weights)

    def rejection_keep(self, group: Sequence[ScoredSample]) -> list[bool]:
        """The RFT verdict per sample of one prompt group (see the module docstring)."""
        rule = self.config.rejection_sampling
        keep = [not s.removed and s.task_reward >= rule.success_threshold for s in group]
        if any(keep):
            return keep
        candidates = [i for i, s in enumerate(group) if not s.removed and s.partial >= rule.fallback_partial]
        if candidates:
            best = max(candidates, key=lambda i: group[i].partial)  # the first of equals
            keep[best] = True
        return keep


@dataclass(frozen=True)
class ScoredSample:
    """What the batch-level steps read of one sample."""

    task_id: str
    task_reward: float
    shaped: float
    partial: float
    removed: bool = False
    # The RFT filter's verdict; None when the sample did not go through it.
    rft_keep: bool | None = None


@dataclass(frozen=True)
class Normalization:
    """slime's settings that decide how rewards are normalised."""

    advantage_estimator: str
    rewards_normalization: bool
    grpo_std_normalization: bool
    group_size: int


@dataclass(frozen=True)
class PostProcessed:
    rewards: list[float]
    curriculum_weights: list[float]


def group_normalize(
    rewards: Sequence[float], valid: Sequence[bool], group_size: int, *, std: bool
) -> list[float]:
    """Per consecutive group of `group_size`: (r − mean over valid)·valid, divided by the population
    std over valid samples + 1e-6 when `std`."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(
            f"{counted(len(rewards), 'reward')} do not form groups of n_samples_per_prompt={group_size}"
        )
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        group = rewards[start : start + group_size]
        mask = [1.0 if ok else 0.0 for ok in valid[start : start + group_size]]
        count = max(sum(mask), 1.0)
        mean = sum(r * m for r, m in zip(group, mask, strict=True)) / count
        centered = [(r - mean) * m for r, m in zip(group, mask, strict=True)]
        if std:
            scale = sqrt(sum(c * c for c in centered) / count) + STD_EPS
            centered = [c / scale for c in centered]
        out.extend(centered)
    return out


class TaskCurriculum:
    """Success rates per task id; thread-safe, process-local (one per rollout worker, as published)."""

    def __init__(self, config: CurriculumWeighting, success_threshold: float) -> None:
        self.config, self.success_threshold = config, success_threshold
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = defaultdict(int)
        self._successes: dict[str, int] = defaultdict(int)

    def observe(self, task_id: str, task_reward: float) -> float:
        """Count one attempt, then return the task's weight (the attempt itself included)."""
        if not self.config.enabled or not task_id:
            return 1.0
        with self._lock:
            self._attempts[task_id] += 1
            self._successes[task_id] += int(task_reward >= self.success_threshold)
            attempts, successes = self._attempts[task_id], self._successes[task_id]
        if attempts < self.config.min_attempts:
            return 1.0
        rate = successes / attempts
        if rate > self.config.solved_above:
            return self.config.solved_weight
        if rate < self.config.hard_below:
            return self.config.hard_weight
        return 1.0


# ------------------------------------------------------------------------------------ slime hooks

_REWARDS: dict[str, Tau2ShapedReward] = {}
_REWARDS_LOCK = threading.Lock()


def reward_post_process(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """slime's --custom-reward-post-process-path: (raw task rewards, rewards to train on)."""
    flat = _flatten(samples)
    reward = _reward(args)
    items = [_scored(sample) for sample in flat]
    norm = Normalization(
        advantage_estimator=str(getattr(args, "advantage_estimator", "grpo")),
        rewards_normalization=bool(getattr(args, "rewards_normalization", True)),
        grpo_std_normalization=bool(getattr(args, "grpo_std_normalization", True)),
        group_size=int(getattr(args, "n_samples_per_prompt", 1)),
    )
    result = reward.post_process(items, norm)
    for sample, item, weight in zip(flat, items, result.curriculum_weights, strict=True):
        sample.metadata = {
            **(sample.metadata or {}),
            "raw_reward": item.task_reward,
            "shaped_reward": item.shaped,
            "curriculum_weight": weight,
        }
    return [item.task_reward for item in items], result.rewards


def rejection_sampling_filter(args: Any, samples: Sequence[Any], **_: Any) -> bool:
    """slime's --dynamic-sampling-filter-path for RFT: marks each sample kept or not, and keeps the
    group only when something in it is kept."""
    flat = _flatten(samples)
    keep = _reward(args).rejection_keep([_scored(sample) for sample in flat])
    for sample, kept in zip(flat, keep, strict=True):
        sample.metadata = {**(sample.metadata or {}), RFT_KEEP_KEY: kept}
    return any(keep)


# Declarations the launcher's pre-flight reads (launch.config.algorithms): the filter judges a prompt's
# group of attempts, and the reward post-process turns its marks into the advantages (1 kept, 0 not),
# so no group baseline is taken: one attempt per task is a valid RFT setting.
rejection_sampling_filter.needs_groups = False  # type: ignore[attr-defined]
rejection_sampling_filter.sets_advantages = True  # type: ignore[attr-defined]


def _reward(args: Any) -> Tau2ShapedReward:
    from t3rl_core.config import RuntimeConfig

    config = RuntimeConfig.from_slime_args(args).reward
    if not isinstance(config, Tau2RewardConfig):
        raise ValueError(
            f"the tau2 reward hooks need reward 'tau2_shaped', the runtime config has '{config.name}'"
        )
    key = config.model_dump_json()
    with _REWARDS_LOCK:
        if key not in _REWARDS:
            _REWARDS[key] = Tau2ShapedReward(config)
        return _REWARDS[key]


def _scored(sample: Any) -> ScoredSample:
    metadata = sample.metadata or {}
    if "outcome" not in metadata:
        raise ValueError("sample has no t3rl outcome: was it produced by t3rl_core.hooks.slime.generate?")
    # An episode that could not start (or whose reward failed) has no metrics: it scored nothing.
    metrics = metadata.get(REWARD_METRICS_KEY) or {}
    reward = sample.reward
    # tau2 task ids repeat across domains ("0" in retail and airline), so statistics key on both.
    task = f"{metadata.get('domain', '')}/{metadata.get('task_id', '')}" if metadata.get("task_id") else ""
    removed = bool(getattr(sample, "remove_sample", False))
    if removed:  # left out of training and of the curriculum: its scores are never read
        task_reward, shaped, partial = 0.0, 0.0, 0.0
    else:
        # A kept sample was scored: a score missing here is a bug to name, never a 0 trained on.
        source = f"the reward metrics of tau2 sample {task or '(no task id)'}"
        task_reward = scored(metrics, "task_reward", source)
        partial = scored(metrics, "partial_score", source)
        shaped = outside_real(reward, f"the reward of tau2 sample {task or '(no task id)'}")
    return ScoredSample(
        task_id=task,
        task_reward=task_reward,
        shaped=shaped,
        partial=partial,
        removed=removed,
        rft_keep=metadata.get(RFT_KEEP_KEY),
    )


def _flatten(samples: Sequence[Any]) -> list[Any]:
    flat: list[Any] = []
    for item in samples:
        flat.extend(_flatten(item) if isinstance(item, list) else [item])
    return flat
