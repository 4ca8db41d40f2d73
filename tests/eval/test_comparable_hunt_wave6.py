"""Comparable results, hunt wave six (docs/explanation/comparable-results.md, "Hunt wave six"): kinds of
results compared wrongly, or refused though they measured the same tasks. Each test fails with its
declaration turned off."""

from __future__ import annotations

from typing import Any

import pytest

from launch.cli.results_compare import differing, reference_identity
from t3rl_core.eval.identity import PARTS, differences


def _identity(categories: list[str] | None, limit: int | None = 2) -> dict[str, Any]:
    """An identity of a complete eval of one split: every part alike but the selection."""
    identity: dict[str, Any] = {part: {"of": part} for part in PARTS}
    identity["selection"] = {"categories": categories, "limit_per_category": limit}
    return identity


EVERY, BASE_ONLY = _identity(None), _identity(["multi_turn_base"])


@pytest.mark.parametrize(
    "metric",
    [
        "categories.multi_turn_base.accuracy",
        "categories.multi_turn_base.pass@1",
        "eval: categories.multi_turn_base.accuracy",
    ],
)
def test_a_categorys_number_compares_across_evals_selecting_more_besides_it(metric: str) -> None:
    """`t3rl runs diff A B --metric categories.multi_turn_base.accuracy`, A an eval of every category, B
    of multi_turn_base alone, both 2 per category: refused (`selection: categories null vs
    ["multi_turn_base"]`, rerun one with the other's categories), though an eval picks each category's
    first rows whatever else it selects: the category's number is over the same tasks in both. Now a
    metric of one category reads the selection as that category's (selected, and its limit)."""
    assert differences(EVERY, BASE_ONLY, metric) == []
    assert differing(BASE_ONLY, reference_identity([EVERY, EVERY], metric), metric) == []


def test_the_overall_and_another_categorys_or_limits_number_stay_refused() -> None:
    """No under-refusal: the overall averages over other tasks; a category B did not select has no
    tasks there; another per-category limit picks other tasks of the category too."""
    (overall,) = differences(EVERY, BASE_ONLY)
    assert overall.startswith("selection: categories null vs"), overall
    (other,) = differences(EVERY, BASE_ONLY, "categories.multi_turn_long_context.accuracy")
    assert "selected true vs false" in other, other
    (limit,) = differences(
        EVERY, _identity(["multi_turn_base"], limit=5), "categories.multi_turn_base.accuracy"
    )
    assert "limit_per_category 2 vs 5" in limit, limit
