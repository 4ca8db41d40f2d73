"""Comparable results, hunt wave six (docs/explanation/comparable-results.md, "Hunt wave six"): kinds of
results compared wrongly, or refused though they measured the same tasks. Each test fails with its
declaration turned off."""

from __future__ import annotations

from typing import Any

import pytest

from launch.cli.results_compare import differing, interval, reference_identity, result_lines, shown_count
from launch.cli.runs_filter import lookup
from t3rl_core.eval.identity import PARTS, differences
from t3rl_core.eval.metrics import EpisodeScore, rate_count, summarize, wilson_interval


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


# ------------------------------------------------ a rate's n: the tasks it averages over


def _eval_with_an_unscored_task() -> dict[str, Any]:
    """Ten tasks of two samples; the engine failed both samples of t9 and one of t8 (within the eval's
    failure rate): accuracy averages over 9 tasks, pass@2 over 8."""
    scores = []
    for i in range(10):
        for sample in range(2):
            failed = i == 9 or (i == 8 and sample == 1)
            status = "aborted" if failed else "completed"
            scores.append(EpisodeScore(f"t{i}", "base", i % 2 == 0, 1.0, status=status))
    return summarize(scores, ks=[1, 2])


def test_a_rates_interval_and_n_count_the_tasks_it_averages_over() -> None:
    """`t3rl runs diff`, `t3rl runs`, sweep.md, the report's resolution and a published verdict took a
    rate's n as the block's `tasks`, every selected task: one the engine failed in every episode (left
    out of the accuracy) or scored on fewer than k samples (left out of pass@k) still counted, so the
    interval was narrower than the rate's own tasks give and `(n=10)` was shown for a mean over 9. Now
    each block records the tasks each rate averages over (`tasks_scored`, metrics.rate_count), the one n
    every interval and every `(n=…)` reads."""
    summary = _eval_with_an_unscored_task()
    overall = summary["overall"]
    assert overall["tasks"] == 10
    rates = {"accuracy": 9, "pass@1": 9, "pass^1": 9, "pass@2": 8, "pass^2": 8}
    assert overall["tasks_scored"] == rates | {"accuracy_without_user_simulator": 9}
    for metric, n in [("overall.accuracy", 9), ("overall.pass@2", 8), ("categories.base.accuracy", 9)]:
        value = lookup(summary, metric)
        assert shown_count(summary, metric) == n, metric
        assert interval(summary, metric, value) == wilson_interval(round(value * n), n), metric
    assert shown_count(summary, "overall.reward") == 10, "a mean reward shows the block's tasks"


def test_a_summary_written_before_the_counts_reads_its_tasks() -> None:
    """A summary of an older t3rl has no `tasks_scored`: its tasks, as before (episodes in the oldest)."""
    summary = _eval_with_an_unscored_task()
    del summary["overall"]["tasks_scored"]
    assert rate_count(summary["overall"], "accuracy") == 10
    assert rate_count({"episodes": 7}, "pass@1") == 7


def test_the_reports_interval_is_the_one_runs_diff_gives() -> None:
    """report.md's `accuracy 95 % CI (Wilson)` column and accuracy_by_category.png took n as the scored
    episodes (17 here: two samples of a task are no independent draws), so the report's interval of an
    accuracy was narrower than `t3rl runs diff`'s and its own Too small to tell section's. Now it is the
    same interval, over the tasks the accuracy averages (metrics.rate_count)."""
    from t3rl_core.eval.report import chart_bars

    summary = _eval_with_an_unscored_task()
    overall = chart_bars(summary)[-1]
    value = summary["overall"]["accuracy"]
    assert overall.tasks == 9
    assert (overall.low, overall.high) == interval(summary, "overall.accuracy", value)


# ------------------------------------------------ a category one listed eval did not select


def _with(categories: list[str], identity: dict[str, Any]) -> dict[str, Any]:
    scores = [EpisodeScore(f"{c}_{i}", c, True, 1.0) for c in categories for i in range(2)]
    return summarize(scores, ks=[1]) | {"identity": identity}


def test_a_listing_of_a_category_one_eval_did_not_select_ranks_the_one_that_did() -> None:
    """`t3rl runs --metric categories.multi_turn_long_context.accuracy` over an eval of every category
    and a newer one of multi_turn_base alone: the newer, which has no number there, was taken as the
    reference (a tie goes to the first listed), so the eval that measured it read `not ranked:
    selection: …` and the other a bare `–`. Now only results holding a number define the reference,
    and one without says why: the eval has no task of that category."""
    metric = "categories.multi_turn_long_context.accuracy"
    every = _with(["multi_turn_base", "multi_turn_long_context"], EVERY)
    base_only = _with(["multi_turn_base"], BASE_ONLY)
    reference = reference_identity([base_only, every], metric)
    assert reference == EVERY
    (measured,) = result_lines("eval", 1.0, 2, every, reference, mixed=False, metric=metric)
    assert measured == "eval 1.000 (n=2)", measured
    (lacking,) = result_lines("eval", None, None, base_only, reference, mixed=False, metric=metric)
    assert lacking == (
        "eval accuracy not measured: this eval has no task of category multi_turn_long_context "
        "(eval.categories: multi_turn_base)"
    ), lacking
