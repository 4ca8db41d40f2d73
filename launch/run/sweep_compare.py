"""A sweep's points compared as results: by interval, and only when they measured the same benchmark.

Each scored point's eval summary gives its metric's 95 % Wilson interval (over the eval's tasks, when the
metric is a rate: accuracy, pass@k, pass^k) and its benchmark identity (t3rl_core.eval.identity). The
reference identity is the one most scored points share; a point of another identity is not ranked (its
mark names the part that differs), nor is one whose summary records none beside recorded ones; neither
is drawn in sweep.png. Among the others, the best point is the highest; every point whose interval
overlaps the best one's is marked so: the sweep cannot tell them apart.

Objectives (an hparams search) are guarded the same way: a trial whose benchmark differs from the first
scored trial's (recorded in `<sweep dir>/identity.json`) fails instead of feeding the study
(`objective_identity_differences`, read by launch.run.sweep.point_metric).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.eval.metrics import rate_count, wilson_interval
from t3rl_core.finite import finite_real

# A sweep's record (launch.run.sweep.SweepSummary, which imports this module for its markdown) is read
# through its `metric_name` and `points` only.
SweepSummary = Any

# Metrics that are a share of tasks or episodes (a Wilson interval applies).
RATE_KEYS = ("accuracy", "pass@", "pass^")
IDENTITY_FILE = "identity.json"
UNKNOWN_BENCHMARK = (
    "benchmark unknown: its eval summary records no identity (missing, unreadable, or written before t3rl "
    "kept one)"
)


@dataclass(frozen=True)
class PointResult:
    index: int
    metric: float
    # The interval's bounds, or None when the metric is not a rate (or its summary gives no count).
    low: float | None
    high: float | None
    identity: Mapping[str, Any] | None


def is_rate(metric_name: str | None) -> bool:
    key = (metric_name or "").rpartition(": ")[2]
    return any(part in key.rsplit(".", 1)[-1] for part in RATE_KEYS)


def summary_path(run_dir: str | None, metric_name: str | None) -> Path | None:
    stage = (metric_name or "").rpartition(": ")[0]
    return Path(run_dir) / "stages" / stage / "summary.json" if run_dir and stage else None


def count(summary: Mapping[str, Any], metric_name: str | None = None) -> int | None:
    """How many independent units the metric averages: the tasks (episodes in older summaries) of the
    block that holds it, the overall one for an overall metric, a category's for a category's metric
    (`eval: categories.multi_turn_base.accuracy`: the overall's 400 tasks gave an interval twice too
    narrow for the category's 100, and points the sweep cannot tell apart were ranked below best)."""
    key = (metric_name or "").rpartition(": ")[2]
    block: Any = summary
    for part in key.split(".")[:-1] if "." in key else ["overall"]:
        block = block.get(part) if isinstance(block, Mapping) else None
    block = block if isinstance(block, Mapping) else {}
    # The tasks the rate itself averages over (metrics.rate_count): a task left unscored is no unit of it.
    value = rate_count(block, key.rpartition(".")[2] if "." in key else "accuracy")
    return value if value is not None and value > 0 else None


def point_results(sweep: SweepSummary) -> list[PointResult]:
    rate = is_rate(sweep.metric_name)
    results = []
    for index in sorted(sweep.points):
        record = sweep.points[index]
        if record.metric is None or not finite_real(record.metric):
            continue  # a NaN (a sweep.json written before read_metric refused one) has no rank
        summary = _read(summary_path(record.run_dir, sweep.metric_name))
        n = count(summary, sweep.metric_name) if rate else None
        low, high = wilson_interval(round(record.metric * n), n) if n else (None, None)
        identity = summary.get("identity") if isinstance(summary.get("identity"), Mapping) else None
        results.append(PointResult(index, record.metric, low, high, identity))
    return results


def _read(path: Path | None) -> dict[str, Any]:
    try:
        data = outside_json.read_file(path) if path else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def marks(sweep: SweepSummary) -> dict[int, str]:
    """Each scored point's standing: best, overlaps best, below best, or not ranked (and why)."""
    # lazy: importlib.metadata (installed versions), only when points are compared
    from t3rl_core.eval.identity import differences, reference

    results = point_results(sweep)
    common = reference((r.identity for r in results), sweep.metric_name)
    found: dict[int, str] = {}
    ranked = []
    for result in results:
        if common is not None and result.identity is None:
            # What it measured is unknown: beside recorded ones it is not ranked (as in `t3rl runs`).
            found[result.index] = f"not ranked, {UNKNOWN_BENCHMARK}"
            continue
        parts = differences(common, result.identity, sweep.metric_name) if common is not None else []
        if parts:
            found[result.index] = "not ranked, another benchmark: " + "; ".join(parts)
        else:
            ranked.append(result)
    if not ranked:
        return found
    best = max(ranked, key=lambda r: r.metric)
    for result in ranked:
        if result is best:
            found[result.index] = f"best{_interval(result)}"
        elif not _has_interval(result) or not _has_interval(best):
            found[result.index] = "no interval (not a rate)"
        elif result.low <= best.high and best.low <= result.high:  # type: ignore[operator]
            found[result.index] = f"overlaps best{_interval(result)}"
        else:
            found[result.index] = f"below best{_interval(result)}"
    return found


def _has_interval(result: PointResult) -> bool:
    return result.low is not None and result.high is not None


def _interval(result: PointResult) -> str:
    return f" [{result.low:.3f}, {result.high:.3f}]" if _has_interval(result) else ""


def unranked(sweep: SweepSummary) -> set[int]:
    """Points left out of sweep.png: their benchmark differs from the sweep's reference."""
    return {index for index, mark in marks(sweep).items() if mark.startswith("not ranked")}


def objective_identity_differences(
    sweep_dir: Path, summary: Mapping[str, Any], metric: str | None = None
) -> list[str]:
    """Record the first scored trial's identity in the sweep dir; for a later one, the parts in which its
    identity differs from it for a comparison on `metric` (empty: the same benchmark, or no identity
    recorded)."""
    # lazy: importlib.metadata (installed versions), only when points are compared
    from t3rl_core.eval.identity import differences

    own = summary.get("identity")
    if not isinstance(own, Mapping):
        return []
    path = sweep_dir / IDENTITY_FILE
    staged = sweep_dir / f".{IDENTITY_FILE}.{os.getpid()}"
    staged.write_text(json.dumps(own, indent=2) + "\n")
    try:  # the first scored trial's identity is the study's: a hard link appears whole, or not at all
        os.link(staged, path)
    except FileExistsError:
        reference = outside_json.read_file(path)
    else:
        return []
    finally:
        staged.unlink()
    return differences(reference, own, metric)
