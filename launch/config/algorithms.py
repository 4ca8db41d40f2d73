"""What slime's advantage estimators and dynamic-sampling filters need, declared next to where t3rl
writes them into slime's argv (`launch.plan.slime_args`). The pre-flight reads these declarations
(`launch.checks.rules.values`, `.batch`); it does not know estimators or filters by name.

A filter of t3rl's own, or a user's, declares itself with attributes on its function:
`needs_groups = True` (it judges a prompt's group of samples, so a group of one is meaningless) and
`sets_advantages = True` (it marks samples that a reward post-process turns into the advantages,
replacing the estimator's group baseline, as tau2's rejection-sampling filter does).
"""

from __future__ import annotations

from launch.config.slime_objects import SLIME_OBJECTS
from t3rl_core.import_paths import resolve
from t3rl_core.records import Record
from t3rl_core.registry import load_object


class Estimator(Record):
    """What one `--advantage-estimator` value needs, as t3rl runs it."""

    # The advantage is the reward minus the mean of the prompt's group: a group of one learns nothing.
    group_baseline: bool
    # Its returns are GRPO's (one outcome value per sample), which t3rl's advantage hooks replace.
    grpo_returns: bool
    # Why t3rl's train stage cannot run it; None = it can.
    unsupported: str | None = None
    # The slime flag that, passed through model.architecture.extra_args, gives what `unsupported` lacks.
    unless_passed: str | None = None


_NORMALIZE = "slime requires --normalize-advantages for it, which t3rl does not pass itself"
ESTIMATORS: dict[str, Estimator] = {
    "grpo": Estimator(group_baseline=True, grpo_returns=True),
    "gspo": Estimator(group_baseline=True, grpo_returns=True),
    "cispo": Estimator(group_baseline=True, grpo_returns=True),
    "reinforce_plus_plus": Estimator(
        group_baseline=False,
        grpo_returns=False,
        unsupported=_NORMALIZE,
        unless_passed="--normalize-advantages",
    ),
    "reinforce_plus_plus_baseline": Estimator(
        group_baseline=True,
        grpo_returns=False,
        unsupported=_NORMALIZE,
        unless_passed="--normalize-advantages",
    ),
    "ppo": Estimator(
        group_baseline=False,
        grpo_returns=False,
        unsupported="ppo trains a critic, which t3rl's train stage does not configure (no critic checkpoint "
        "or optimizer)",
    ),
}


# slime's MultiTurnLossMaskGenerator knows these chat formats only: t3rl's family → slime's name for it.
SFT_LOSS_MASK = {"qwen3": "qwen3", "qwen2_5": "qwen"}


class Filter(Record):
    """What a dynamic-sampling filter needs and does."""

    needs_groups: bool = False
    sets_advantages: bool = False


# slime's own filters (slime is not installed where the pre-flight runs), by import path.
_SLIME_FILTERS = {
    "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std": Filter(needs_groups=True),
    "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std_with_fallback": Filter(
        needs_groups=True
    ),
}


def filter_declaration(path: str) -> Filter:
    """The declaration of the filter at `path` (an unresolved path declares nothing: the import-path
    rule reports it)."""
    if path in _SLIME_FILTERS:
        return _SLIME_FILTERS[path]
    if resolve(path, {"slime": SLIME_OBJECTS}) is not None or path.startswith("slime."):
        return Filter()
    function = load_object(path)
    return Filter(
        needs_groups=bool(getattr(function, "needs_groups", False)),
        sets_advantages=bool(getattr(function, "sets_advantages", False)),
    )
