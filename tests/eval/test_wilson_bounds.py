"""The Wilson interval and the charts drawn from it, over every (n, k) an eval can produce: the interval
holds the observed rate, and no whisker is negative (matplotlib refuses one, and the eval used to die
between summary.json and report.md when every task passed)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from t3rl_core.eval.metrics import EpisodeScore, summarize, wilson_interval
from t3rl_core.eval.report import REPORT_FILE, chart_bars, error_bars, write_report

LARGEST_N = 300


def test_the_interval_holds_the_rate_for_every_n_and_k_up_to_a_few_hundred() -> None:
    for n in range(1, LARGEST_N + 1):
        for k in range(n + 1):
            low, high = wilson_interval(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0, (n, k, low, high)
        assert wilson_interval(n, n)[1] == 1.0 and wilson_interval(0, n)[0] == 0.0


def _summary(passes: list[list[bool]]) -> dict:
    """An eval summary of one category whose task t has the samples passes[t]."""
    scores = [
        EpisodeScore(f"multi_turn_base/{task}", "multi_turn_base", passed, 0.0, 0.0)
        for task, samples in enumerate(passes)
        for passed in samples
    ]
    return summarize(scores, ks=[1])


@given(
    st.integers(1, 4).flatmap(
        lambda k: st.lists(st.lists(st.booleans(), min_size=k, max_size=k), min_size=1, max_size=60)
    )
)
def test_no_whisker_is_negative_whatever_the_passes(passes: list[list[bool]]) -> None:
    below, above = error_bars(chart_bars(_summary(passes)))
    assert min(below) >= 0.0 and min(above) >= 0.0


def test_an_eval_where_every_task_passes_or_fails_writes_its_report(tmp_path: Path) -> None:
    for n, passed in ((6, True), (21, True), (11, False), (27, False)):
        out = tmp_path / f"{n}-{passed}"
        write_report({**_summary([[passed]] * n), "split": "bfcl_test"}, out)
        assert (out / REPORT_FILE).exists()
