"""Variance across whole-eval repeats (`eval.repeats`): repeat r is the same eval with seed `eval.seed + r`.

Per metric (accuracy, pass@k, pass^k), overall and per category: the value of each repeat, their mean
and sample standard deviation (None with one repeat). Per-task agreement is the share of tasks whose
success rate was the same in every repeat (for one sample per task: passed in all, or failed in all).
The summary's main numbers pool the episodes of all repeats (more samples per task, same estimators).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean, stdev
from typing import Any

from t3rl_core.eval.metrics import ENGINE_FAILURE, OVERALL, EpisodeScore, summarize


def repeat_stats(
    scored: Iterable[tuple[int, EpisodeScore]],
    repeats: int,
    ks: Sequence[int],
    pooled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`{"count", "overall": {...}, "categories": {name: {...}}}` from (repeat, score) pairs. `pooled`
    is `summarize` of every score in their order (summary.json's own numbers), when the caller has it:
    with one repeat it is that repeat's summary, not made again after the eval's last episode."""
    by_repeat: dict[int, list[EpisodeScore]] = defaultdict(list)
    for repeat, score in scored:
        by_repeat[repeat].append(score)
    if pooled is not None and repeats == 1 and set(by_repeat) <= {0}:
        summaries = [pooled]
    else:
        summaries = [summarize(by_repeat.get(r, []), ks) for r in range(repeats)]
    names = sorted({name for summary in summaries for name in summary["categories"]})
    keys = ["accuracy", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)]
    return {
        "count": repeats,
        OVERALL: _stats([s[OVERALL] for s in summaries], keys, by_repeat, None),
        "categories": {
            name: _stats([s["categories"].get(name, {}) for s in summaries], keys, by_repeat, name)
            for name in names
        },
    }


def _stats(
    blocks: list[dict[str, Any]],
    keys: list[str],
    by_repeat: dict[int, list[EpisodeScore]],
    category: str | None,
) -> dict[str, Any]:
    stats: dict[str, Any] = {}
    for key in keys:
        values = [block.get(key) for block in blocks]
        known = [v for v in values if isinstance(v, int | float)]
        stats[key] = {
            "values": values,
            "mean": fmean(known) if known else None,
            "std": stdev(known) if len(known) > 1 else None,
        }
    stats["agreement"] = agreement(by_repeat, category)
    return stats


def agreement(by_repeat: dict[int, list[EpisodeScore]], category: str | None = None) -> float | None:
    """Share of tasks (seen in every repeat) whose success rate is equal across repeats; None with
    fewer than two repeats."""
    if len(by_repeat) < 2:
        return None
    rates: dict[str, list[float]] = defaultdict(list)
    for scores in by_repeat.values():
        per_task: dict[str, list[bool]] = defaultdict(list)
        for score in scores:
            if score.status != ENGINE_FAILURE and (category is None or score.category == category):
                per_task[score.task_id].append(score.success)
        for task, outcomes in per_task.items():
            rates[task].append(fmean(outcomes))
    seen = [values for values in rates.values() if len(values) == len(by_repeat)]
    if not seen:
        return None
    return sum(len(set(values)) == 1 for values in seen) / len(seen)
