"""The settings of BFCL's corrective hints (`t3rl_core.envs.bfcl.augment`), apart from the code that
writes them: validating a config (`t3rl plan`, `validate`) reads these without importing the env's
worlds and runtime types."""

import typing
from typing import Literal

from pydantic import Field

from t3rl_core.fields import Probability, Seed
from t3rl_core.strict import StrictModel

HintKind = Literal["unknown_function", "missing_parameter", "wrong_type", "missing_path"]
KINDS: tuple[HintKind, ...] = typing.get_args(HintKind)


class AugmentationConfig(StrictModel):
    """Corrective hints after failed calls, train mode only."""

    enabled: bool = False
    # At least one, as every list that selects (categories, domains, splits): none would be
    # `enabled` with nothing to do, a hint-free run that says otherwise (enabled=false is that run).
    kinds: list[HintKind] = Field(default_factory=lambda: list(KINDS), min_length=1)
    # Chance that a failed call whose error a kind explains gets its hint.
    probability: Probability = 1.0
    seed: Seed = 0
