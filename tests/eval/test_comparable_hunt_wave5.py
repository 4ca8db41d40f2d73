"""Comparable results, hunt wave five (docs/explanation/comparable-results.md, "Hunt wave five"): kinds
of results that looked comparable and were not. Each test fails with its declaration turned off."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from t3rl_core.eval.published import PublishedConfig
from t3rl_core.eval.verdict import NOT_COMPARABLE, verdicts

REPO = Path(__file__).resolve().parents[2]


def _published(values: list[dict[str, Any]], average: str = "tasks") -> PublishedConfig:
    return PublishedConfig.model_validate(
        {
            "results": [
                {
                    "label": "paper",
                    "model": "m",
                    "benchmark": "b",
                    "split": "s",
                    "metric": {"average": average},
                    "values": values,
                    "source": "a table",
                }
            ],
            "target": "paper",
        }
    )


def _summary(**tasks: int) -> dict[str, Any]:
    """A complete eval of split s whose categories have these task counts, each at accuracy 0.5."""
    blocks = {name: {"tasks": n, "accuracy": 0.5} for name, n in tasks.items()}
    return {
        "complete": True,
        "split": "s",
        "overall": {"tasks": sum(tasks.values()), "accuracy": 0.5},
        "categories": blocks,
    }


# ------------------------------------------------ a published overall averaged per category, not per task

# A leaderboard's overall: the mean of its two categories' values (0.81 + 0.21) / 2, over 100 + 300
# tasks; over tasks it is (81 + 63) / 400 = 0.36.
PER_CATEGORY = [
    {"scope": "overall", "value": 0.51, "tasks": 400},
    {"scope": "a", "value": 0.81, "tasks": 100},
    {"scope": "b", "value": 0.21, "tasks": 300},
]


def test_an_overall_averaged_per_category_declared_as_per_task_is_refused() -> None:
    """A published overall that is the mean of its categories' values was declared (by default) as a
    mean over tasks, and compared with t3rl's per-task overall: one number over two denominators. Now
    the declaration is refused where its values say otherwise, naming the fix."""
    with pytest.raises(ValidationError, match=r"not the mean over tasks .*average: categories"):
        _published(PER_CATEGORY)
    assert _published(PER_CATEGORY, average="categories")
    # A per-task overall declared per category, the other way round.
    per_task = [dict(v) for v in PER_CATEGORY]
    per_task[0]["value"] = 0.36
    with pytest.raises(ValidationError, match=r"declare metric\.average: tasks"):
        _published(per_task, average="categories")
    # Values that are neither mean: one of them is another scope's.
    wrong = [dict(v) for v in PER_CATEGORY]
    wrong[0]["value"] = 0.71
    with pytest.raises(ValidationError, match="another scope's"):
        _published(wrong)


def test_the_shipped_declarations_and_rounded_values_stay_valid() -> None:
    """No over-refusal: every shipped declaration (tau2's 57.1 % = (10 + 19 + 11) / 70, rounded to its
    last digit), categories of equal size (both means are one), and values without task counts."""
    for file in sorted((REPO / "conf" / "published").glob("*.yaml")):
        PublishedConfig.model_validate(yaml.safe_load(file.read_text()))
    equal = [{"scope": "overall", "value": 0.5, "tasks": 200}, *({"scope": s, "value": v, "tasks": 100}
             for s, v in (("a", 0.8), ("b", 0.2)))]  # fmt: skip
    assert _published(equal) and _published(equal, average="categories")
    assert _published([{"scope": "overall", "value": 0.5}, {"scope": "a", "value": 0.9}])


def test_a_per_category_overall_against_an_eval_of_unequal_categories_is_not_comparable() -> None:
    """The verdict compared a published per-category overall with the eval's per-task one. Now: `not
    comparable` where the eval's categories have other task counts (the two means differ), with the
    counts; compared where they are equal (the two means are one); the categories' own values are
    compared either way."""
    published = _published(PER_CATEGORY, average="categories")
    overall, *categories = verdicts(_summary(a=100, b=300), published)
    assert overall["status"] == NOT_COMPARABLE
    assert any("another average" in why and "a 100, b 300" in why for why in overall["why"]), overall
    assert all("another average" not in " ".join(v.get("why", [])) for v in categories)
    equal = _published(
        [{"scope": "overall", "value": 0.5}, {"scope": "a", "value": 0.8}, {"scope": "b", "value": 0.2}],
        average="categories",
    )
    (overall, *_) = verdicts(_summary(a=100, b=100), equal)
    assert "another average" not in " ".join(overall.get("why", [])), overall
