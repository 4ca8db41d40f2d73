"""Variance across whole-eval repeats (`eval.repeats`): repeat r is the same eval with seed `eval.seed + r`.

Per metric (accuracy, pass@k, pass^k), overall and per category: the value of each repeat, their mean
and sample standard deviation (None with one repeat), each repeat's value over the same tasks: those
every repeat scored (`left_out` counts the others, which the engine failed in some repeat). Per-task
agreement is the share of tasks whose success rate was the same in every repeat (for one sample per
task: passed in all, or failed in all). The summary's main numbers pool the episodes of all repeats
(more samples per task, same estimators).
"""

from __future__ import annotations

from collections import Counter, defaultdict
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
        summaries = _on_common_tasks(by_repeat, repeats, ks)
    names = sorted({s.category for scores in by_repeat.values() for s in scores})
    keys = ["accuracy", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)]
    stats = {
        "count": repeats,
        OVERALL: _stats([s[OVERALL] for s in summaries], keys, by_repeat, None),
        "categories": {
            name: _stats([s["categories"].get(name, {}) for s in summaries], keys, by_repeat, name)
            for name in names
        },
    }
    if repeats > 1:
        for block, category in [(stats[OVERALL], None), *((stats["categories"][n], n) for n in names)]:
            block["left_out"] = _left_out(by_repeat, repeats, category)
    return stats


def _task(score: EpisodeScore) -> str:
    return score.task_id  # unique across categories (runner.plan_jobs), as metrics' tasks are keyed


def _scored_in_every(by_repeat: dict[int, list[EpisodeScore]], repeats: int, least: int) -> set[str]:
    """The tasks with at least `least` scored episodes in every repeat."""
    found: set[str] | None = None
    for r in range(repeats):
        counts = Counter(_task(s) for s in by_repeat.get(r, []) if s.status != ENGINE_FAILURE)
        enough = {task for task, n in counts.items() if n >= least}
        found = enough if found is None else found & enough
    return found or set()


def _on_common_tasks(
    by_repeat: dict[int, list[EpisodeScore]], repeats: int, ks: Sequence[int]
) -> list[dict[str, Any]]:
    """Each repeat's summary over the tasks every repeat scored (pass@k / pass^k: with k scored samples
    in every repeat): a task the engine failed in one repeat moved that repeat's value by the task, not
    by the seed, and the spread read as variance (two repeats 0.5 and 1.0, every task agreeing)."""
    common = _scored_in_every(by_repeat, repeats, 1)
    summaries = [
        summarize([s for s in by_repeat.get(r, []) if _task(s) in common], ks) for r in range(repeats)
    ]
    for k in ks:
        kept = _scored_in_every(by_repeat, repeats, k)
        if k == 1 or kept == common:
            continue
        for r, summary in enumerate(summaries):
            part = summarize([s for s in by_repeat.get(r, []) if _task(s) in kept], [k])
            for block, own in [(summary[OVERALL], part[OVERALL]), *_paired(summary, part)]:
                block[f"pass@{k}"], block[f"pass^{k}"] = own[f"pass@{k}"], own[f"pass^{k}"]
    return summaries


def _paired(summary: dict[str, Any], part: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(block, its part's block) per category of `summary`; a category `part` lacks measured nothing."""
    empty = {key: None for key in part[OVERALL] if key.startswith("pass")}
    return [(block, part["categories"].get(name, empty)) for name, block in summary["categories"].items()]


def _left_out(by_repeat: dict[int, list[EpisodeScore]], repeats: int, category: str | None) -> int:
    """Tasks some repeat scored and another did not (left out of each repeat's accuracy)."""
    seen = {
        _task(s)
        for scores in by_repeat.values()
        for s in scores
        if s.status != ENGINE_FAILURE and category in (None, s.category)
    }
    return len(seen - _scored_in_every(by_repeat, repeats, 1))


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
