"""The reward interface: an episode's outcome in, a scalar plus the metrics slime logs out."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from annotated_types import Ge, Le

from t3rl_core.contracts import override_problem, unawaited
from t3rl_core.fields import Domain
from t3rl_core.finite import finite_real, shown
from t3rl_core.rollout.verdict_fields import VERDICT_FIELDS

# The largest reward, in size, that slime trains on. slime z-scores (or sums) a group's rewards as float32,
# whose range ends at 3.4e38: a reward of 1e39, finite as a Python float, is inf there, and its group's
# advantages NaN. Within 1e37 a group's mean and differences stay finite.
REWARD_LIMIT = 1e37
# The size of a reward's range bounds and of the weights of its parts (ToolRL's ranges, tau2's α and
# weights). Past 2**24 float32, the format slime trains rewards in, cannot tell a reward from the one a
# unit away (a check's 1 beside its 0 is lost), and an unbounded range or weight gave inf or NaN rewards
# (ToolRL's range of ±1e308: max - min is inf; tau2's weights of 1e308: their sum is inf, the partial
# score inf / inf). Within it every shaped reward stays far inside REWARD_LIMIT (tau2's largest: 1 + α
# times a domain's multiplier, times a curriculum weight, under 2**73).
REWARD_SCALE_MAX = 2.0**24
RewardBound = Annotated[
    float,
    Domain("reward bound", "a finite number in [-2**24, 2**24]: an end of a reward's range"),
    Ge(-REWARD_SCALE_MAX),
    Le(REWARD_SCALE_MAX),
]
RewardWeight = Annotated[
    float,
    Domain("reward weight", "a weight in [0, 2**24] of a reward or of its parts"),
    Ge(0),
    Le(REWARD_SCALE_MAX),
]


@dataclass(frozen=True)
class RewardInput:
    """Everything a reward may read about one finished episode."""

    outcome: Mapping[str, Any]  # Env.outcome()
    response: str = ""  # the assistant side of the episode as text (model turns only)
    label: Any = None  # the dataset row's label, when the data has one
    metadata: Mapping[str, Any] = field(default_factory=dict)  # the dataset row's metadata
    step: int = 0  # training step (slime rollout id); 0 in eval


@dataclass(frozen=True)
class RewardResult:
    """The scalar reward and named parts or diagnostics logged beside it."""

    value: float
    metrics: dict[str, float] = field(default_factory=dict)
    # Why `value` measures nothing of the episode (its grading gave no grade: ReTool's math-verify past
    # its budget, raising, or its worker dying, with the answer's format met), None when it does. Such a
    # value is the reference's stand-in (0), not the policy's score: slime's generate hook leaves the
    # sample and its prompt group out of training (a `reward/NotGraded` failure), where it trained at 0.
    ungraded: str | None = None


class InvalidReward(ValueError):
    """A reward function returned what slime cannot train on as a reward (a bug of the reward)."""


def checked(result: RewardResult, source: str = "a reward") -> RewardResult:
    """`result` with its value a finite built-in float (a numpy scalar converted) and each metric one
    (a bool metric converted too: a share of episodes); raises InvalidReward otherwise, naming `source`
    (the reward that gave it). slime z-scores the value within its prompt group: one NaN or infinity
    makes every advantage of the group NaN, and None or a text stops the batch's reward tensor. A bool
    value is refused: a reward is declared a real number, and `RewardResult(True)` (a check returned
    where its score was meant) was read as 1.0 without a word. The metrics are averaged over the batch
    (rollout/<source>/<name>, the eval's summary): one NaN makes the mean NaN, and a value no mean
    takes was left out of it without a word."""
    if not isinstance(result, RewardResult):
        raise InvalidReward(
            unawaited(result, source, "a RewardResult")
            or f"{source} returns a RewardResult, got {type(result).__name__} {shown(result)}"
        )
    if isinstance(result.value, bool):
        raise InvalidReward(
            f"{source} gave the bool {result.value!r} as its reward: a reward is a real number, "
            f"return RewardResult(float(...)) (1.0 / 0.0) instead"
        )
    value = _finite(result.value, source)
    if abs(value) > REWARD_LIMIT:
        raise InvalidReward(
            f"{source} gave {value!r}, past {REWARD_LIMIT:g} in size: slime trains on rewards as float32 "
            "(up to 3.4e38), where its group's differences overflow to inf and its advantages are NaN"
        )
    if not isinstance(result.metrics, Mapping):
        raise InvalidReward(f"a reward's metrics are a mapping, got {type(result.metrics).__name__}")
    metrics = {}
    for name, metric in result.metrics.items():
        if not isinstance(name, str):
            named = f"{type(name).__name__} {shown(name)}"
            raise InvalidReward(f"a reward metric is named by a text, got {named}")
        metrics[name] = _finite(metric, f"reward metric {name!r}")
        if name in VERDICT_FIELDS and not 0 <= metrics[name] <= 1:
            # The eval's success and progress read these before the outcome's (a world's metrics pass
            # through env_score): a world's `metrics: {"accuracy": 5}` made a reward of 0 a success.
            raise InvalidReward(
                f"{source} gave the metric {name!r} {metrics[name]!r}, outside the [0, 1] of a verdict the "
                "eval reads (success, progress: a share); report another scale under another name"
            )
    if result.ungraded is not None and not (isinstance(result.ungraded, str) and result.ungraded):
        raise InvalidReward(
            f"{source} gave ungraded={shown(result.ungraded)}: it is None (the value measures the episode) "
            "or the text saying why no grade was given"
        )
    return RewardResult(value, metrics, result.ungraded)


def within_bounds(reward: Any, inp: RewardInput, result: RewardResult) -> RewardResult:
    """`checked(result)`, and its value within the bounds `reward` declares for `inp` (a `Reward`'s
    `bounds`; none for a plain callable); raises InvalidReward otherwise. A value past its own formula's
    range is a bug the z-scores of its group hide: a progress of 1.5 (a world reporting more turns
    correct than it counted) outweighed every sibling that solved the task."""
    result = checked(result, reward_name(reward))
    declared = reward.bounds(inp) if isinstance(reward, Reward) else None
    if declared is not None:
        low, high = _range(reward, declared)
        # Rounding slack: (hi - lo) * 1 + lo may land an ulp past hi.
        slack = 1e-9 * max(1.0, abs(low), abs(high))
        if not low - slack <= result.value <= high + slack:
            raise InvalidReward(
                f"{type(reward).__name__} gave {result.value!r}, outside the [{low:g}, {high:g}] its "
                "formula declares for this episode"
            )
    return result


def _range(reward: Reward, declared: Any) -> tuple[float, float]:
    """The (low, high) a reward's `bounds` declared, read as a range: two finite numbers, low <= high,
    within REWARD_LIMIT. Read as it came, an inverted or NaN range refused every value (blamed on the
    value, "outside the [1, 0] its formula declares"), and a triple or a text raised Python's words."""
    pair = tuple(declared) if isinstance(declared, tuple | list) else None
    if (
        pair is None
        or len(pair) != 2
        or not all(isinstance(end, numbers.Real) and not isinstance(end, bool) for end in pair)
        or not all(finite_real(end) and abs(end) <= REWARD_LIMIT for end in pair)
        or pair[0] > pair[1]
    ):
        raise InvalidReward(
            f"{type(reward).__name__}.bounds() returned {shown(declared)}, no range: it returns (low, high), "
            f"two finite numbers within ±{REWARD_LIMIT:g} with low <= high, or None for no declared range"
        )
    return float(pair[0]), float(pair[1])


def task_named(inp: RewardInput) -> str:
    """How a message names `inp`'s task: " of task 'ID'" from the outcome's or the row's task id (or
    index), "" when neither has one."""
    for source in (inp.outcome, inp.metadata):
        for key in ("task_id", "index"):
            value = source.get(key) if isinstance(source, Mapping) else None
            if value is not None:
                return f" of task {shown(value)}"
    return ""


def reward_name(reward: Any) -> str:
    """How a message names the reward function `reward` (a plugin's, by its import path)."""
    named = reward if callable(reward) and hasattr(reward, "__qualname__") else type(reward)
    module = getattr(named, "__module__", None)
    qualname = getattr(named, "__qualname__", type(reward).__name__)
    return f"reward {module}.{qualname}" if module else f"reward {qualname}"


def _finite(value: Any, what: str) -> float:
    if not isinstance(value, numbers.Real):  # numpy's scalars are registered as Real too
        raise InvalidReward(f"{what} must be a real number, got {type(value).__name__} {shown(value)}")
    if not finite_real(value):
        raise InvalidReward(f"{what} must be finite, got {shown(value)}")
    return float(value)


class Reward(ABC):
    """A reward shape, built from its config."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each method a reward overrides keeps Reward's own contract (t3rl_core.contracts): an
        `async def __call__` gave every episode a coroutine for its reward."""
        super().__init_subclass__(**kwargs)
        for name, method in cls.__dict__.items():
            problem = override_problem(cls, name, method, Reward)
            if problem is not None:
                raise TypeError(problem)

    @abstractmethod
    def __call__(self, inp: RewardInput) -> RewardResult: ...

    def bounds(self, inp: RewardInput) -> tuple[float, float] | None:
        """The lowest and highest value this reward can give `inp`'s episode, as its formula declares
        them (None: not declared). A value outside is the reward's failure (`within_bounds`)."""
        return None

    async def score_async(self, inp: RewardInput) -> RewardResult:
        """The reward of an episode as the episode loop asks for it, on its event loop: `self(inp)`. A
        reward whose cost the model's text controls runs that part where it can be stopped (ReTool's
        math grading: t3rl_core/envs/bounded_calls.py) and overrides this."""
        return self(inp)

    async def aclose(self) -> None:  # noqa: B027  # a no-op by default: most rewards start nothing
        """Release what `score_async` started (worker processes)."""


async def episode_reward(reward: Callable[[RewardInput], RewardResult], inp: RewardInput) -> RewardResult:
    """`reward`'s result for an episode, from the episode loop: a `Reward`'s `score_async`, a plugin's
    plain callable called."""
    return await reward.score_async(inp) if isinstance(reward, Reward) else reward(inp)
