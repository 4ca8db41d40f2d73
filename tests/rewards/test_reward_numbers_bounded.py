"""The kind, not one field: every real number that shapes a reward or an advantage declares an upper bound
(a reward's config, turn credit's λ, the KL-in-reward β, the regularisers beside the policy gradient).
Finite is not enough: each was a float >= 0 or any finite number, and its largest value (1e308) gave
inf or NaN rewards or advantages (tests/rewards/test_reward_domains_finite.py, tests/hooks/
test_turn_weight_domain.py). A field added later without a bound fails here, as the domain audit fails a
field declaring nothing (tests/launch/test_schema_domains.py)."""

from __future__ import annotations

from annotated_types import Interval, Le, Lt
from pydantic import BaseModel

from launch.config.schema import AlgorithmConfig
from t3rl_core.config import KlInRewardConfig, RewardConfig
from t3rl_core.credit import TurnCreditConfig
from tests.support.schema_leaves import config_models, import_all, leaves

# Reals that shape no reward or advantage, each with why it may stay unbounded above.
EXEMPT = {
    "eps_clip_high": "the upper clip of an importance ratio: a larger one clips nothing (slime takes min)",
    "eps_clip_c": "dual-clip's bound of negative advantages' loss: a larger one bounds nothing (a min)",
}
_ALGORITHM = ("kl_loss_coef", "entropy_coef", "turn_outcome_weight")


def _bounded_above(metadata: tuple) -> bool:
    return any(
        isinstance(item, Le | Lt)
        or (isinstance(item, Interval) and (item.le is not None or item.lt is not None))
        for item in metadata
    )


def _reward_models() -> list[type[BaseModel]]:
    """t3rl's reward configs and the models nested in them (weights, curricula)."""
    import_all()
    return [
        m
        for m in config_models()
        if issubclass(m, RewardConfig) or m.__module__.startswith("t3rl_core.rewards")
    ]


def test_every_real_that_shapes_a_reward_or_an_advantage_is_bounded_above() -> None:
    models = [*_reward_models(), TurnCreditConfig, KlInRewardConfig]
    found = [
        leaf.name
        for model in models
        for leaf in leaves(model)
        if leaf.base is float and leaf.field not in EXEMPT and not _bounded_above(leaf.metadata)
    ]
    found += [
        leaf.name
        for leaf in leaves(AlgorithmConfig)
        if leaf.field in _ALGORITHM and not _bounded_above(leaf.metadata)
    ]
    assert found == []
    assert {"ToolRLRewardConfig", "Tau2RewardConfig", "PartialWeights"} <= {m.__name__ for m in models}
