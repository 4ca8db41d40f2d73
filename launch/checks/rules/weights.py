"""Weights of a mean that are all zero: the mean divides by their sum, so it is not there at all.

A config model whose fields are the weights of a weighted mean declares it (`WEIGHTS_OF_A_MEAN = True`
on the class: tau2's `PartialWeights`); every such section of the validated config, wherever it sits
(a field, a map's value), must have a weight above zero. All zero, the mean is 0/0, which the code
turns into 0 for every episode: a shaping term silently off (its own coefficient says that plainly).
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem


def weights_have_a_sum(ctx: Context) -> Iterator[Problem]:
    """Every section of weights of a mean has one above zero."""
    for key, section in ctx.walk.sections:
        if not getattr(type(section), "WEIGHTS_OF_A_MEAN", False):
            continue
        fields = type(section).model_fields
        if any(getattr(section, name) for name in fields):
            continue
        blamed = ctx.latest(*(f"{key}.{name}" for name in fields))
        positive = {
            n: f.default for n, f in fields.items() if isinstance(f.default, int | float) and f.default
        }
        name = blamed.rpartition(".")[2]
        name, value = (
            (name, positive[name]) if name in positive else next(iter(positive.items()), (name, 1.0))
        )
        yield Problem(
            blamed,
            f"every weight of {key} is 0: they weigh a mean, divided by their sum, so there is no mean "
            "and every episode's score from it is 0",
            fix=f"set {key}.{name}={value:g}",
        )


RULES = (weights_have_a_sum,)
