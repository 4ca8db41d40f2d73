"""Did an eval reproduce the published results its recipe declares (`eval.published`)?

For every published value: `not comparable` when the eval did not measure the same thing (another
split or data, another scorer version, user simulator, temperature, k, categories or task count, or
an incomplete eval), each reason named; otherwise `reproduced` when the published value lies inside the
eval's own confidence interval (Wilson, over the scope's tasks; `tolerance.margin` wider on each side),
else `not reproduced` with the gap (measured − published) and the interval.

The Wilson interval is computed over the scope's tasks with the measured value as the rate: every
per-task score (a success rate, pass@k or pass^k) lies in [0, 1], so its variance is at most that of a
success/failure per task, and the interval is at least as wide as the task-to-task noise requires.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from t3rl_core.eval.metrics import OVERALL, rate_count, wilson_interval
from t3rl_core.model_routes import denoted_model

if TYPE_CHECKING:  # `t3rl runs` reads verdicts (one_line) without loading the config models
    from t3rl_core.eval.published import (
        MetricDefinition,
        PublishedConfig,
        PublishedResult,
        PublishedValue,
        Tolerance,
    )

REPRODUCED, NOT_REPRODUCED, NOT_COMPARABLE = "reproduced", "not reproduced", "not comparable"
# Runs of the characters a distribution's name may hold where pip reads one separator (PEP 503).
_PEP503 = re.compile(r"[-_.]+")


def verdicts(summary: Mapping[str, Any], published: PublishedConfig) -> list[dict[str, Any]]:
    """One verdict per published value, in declaration order."""
    return [
        _verdict(summary, result, value, published.tolerance) | {"role": _role(result, published)}
        for result in published.results
        for value in result.values
    ]


def _role(result: PublishedResult, published: PublishedConfig) -> str:
    """target: the result this eval should reproduce; reference: shown beside it."""
    return "target" if result.label == published.target else "reference"


def _verdict(
    summary: Mapping[str, Any], result: PublishedResult, value: PublishedValue, tolerance: Tolerance
) -> dict[str, Any]:
    key = result.metric.key()
    verdict: dict[str, Any] = {
        "label": result.label,
        "model": result.model,
        "scope": value.scope,
        "metric": key,
        "definition": result.metric.describe(),
        "published": value.value,
        "published_tasks": value.tasks,
        "source": result.source,
    }
    reasons = incomparable(summary, result, value)
    block = _block(summary, value.scope)
    measured = block.get(key) if block else None
    if not reasons and not isinstance(measured, int | float):
        reasons.append(f"this eval did not measure {key} (eval.pass_k={list(summary.get('pass_k') or [])})")
    if reasons:
        return verdict | {"status": NOT_COMPARABLE, "why": reasons}
    assert block is not None and isinstance(measured, int | float)
    tasks = rate_count(block, key) or 0  # the tasks the measured rate averages over
    z = NormalDist().inv_cdf(0.5 + tolerance.confidence / 2)
    low, high = wilson_interval(round(measured * tasks), tasks, z=z)
    inside = low - tolerance.margin <= value.value <= high + tolerance.margin
    return verdict | {
        "status": REPRODUCED if inside else NOT_REPRODUCED,
        "measured": measured,
        "gap": measured - value.value,
        "interval": [low, high],
        "tasks": tasks,
        "confidence": tolerance.confidence,
        # Half the interval's width: differences smaller than this are noise at this many tasks.
        "resolution": (high - low) / 2,
    }


def incomparable(summary: Mapping[str, Any], result: PublishedResult, value: PublishedValue) -> list[str]:
    """Why the eval behind `summary` did not measure what `result` publishes (empty: it did)."""
    reasons: list[str] = []
    if summary.get("complete") is not True:
        reasons.append(f"the eval is incomplete ({summary.get('reason') or 'it stopped early'})")
    split = summary.get("split")
    if result.split is None:
        reasons.append(f"published on {result.benchmark}, which no t3rl split holds (this eval: {split})")
    elif result.split != split:
        reasons.append(f"another split: published on {result.split}, this eval ran {split}")
    identity = summary.get("identity") or {}
    data = (summary.get("dataset") or {}).get("sha256")
    if result.data_sha256 is not None and result.split == split and data != result.data_sha256:
        reasons.append(
            f"other data: {split} has sha256 {_hash(data)}, the declaration pins {_hash(result.data_sha256)}"
        )
    reasons += _scorer(result, identity.get("scorer") or {})
    reasons += _user_simulator(result, identity.get("user_simulator"))
    reasons += _metric(summary, result, value)
    return reasons


def _scorer(result: PublishedResult, scorer: Mapping[str, Any]) -> list[str]:
    if result.scorer is None:
        return []
    published = f"{result.scorer.package} {result.scorer.version or ''}".strip()
    ours = f"{scorer.get('package')} {scorer.get('version') or '(version unknown)'}"
    if not _same_distribution(scorer.get("package"), result.scorer.package):
        return [f"another scorer: published with {published}, this eval scored by {ours}"]
    if result.scorer.version is not None and not _same_version(scorer.get("version"), result.scorer.version):
        return [f"another scorer version: published with {published}, this eval with {ours}"]
    return []


def _same_distribution(ours: Any, published: str) -> bool:
    """One distribution as pip reads names (PEP 503): bfcl_eval, BFCL-Eval and bfcl-eval are bfcl-eval."""
    return isinstance(ours, str) and _PEP503.sub("-", ours).lower() == _PEP503.sub("-", published).lower()


def _same_version(ours: Any, published: str) -> bool:
    """One release as pip reads versions (PEP 440): 26.3 is 26.3.0, 2026.03.23 is 2026.3.23; a version
    packaging cannot read is compared as written."""
    if not isinstance(ours, str):
        return False
    from packaging.version import InvalidVersion, Version  # lazy: only for a declared scorer version

    try:
        return Version(ours) == Version(published)
    except InvalidVersion:
        return ours == published


def _user_simulator(result: PublishedResult, user: Mapping[str, Any] | None) -> list[str]:
    expected = result.user_simulator
    if expected is None:
        return []
    if not user or user.get("model") is None:
        name = (user or {}).get("name") or "none"
        return [f"another user simulator: published with {expected.model}, this eval's is {name} (no model)"]
    reasons = []
    if denoted_model(str(user["model"])) != denoted_model(expected.model):
        reasons.append(
            f"another user simulator: published with {expected.model}, this eval with {user['model']}"
        )
    if expected.temperature is not None and user.get("temperature") != expected.temperature:
        reasons.append(
            f"user simulator temperature: published {expected.temperature:g}, "
            f"this eval {user.get('temperature')}"
        )
    return reasons


def _metric(summary: Mapping[str, Any], result: PublishedResult, value: PublishedValue) -> list[str]:
    metric = result.metric
    reasons = _settings(summary, metric)
    if metric.k not in (summary.get("pass_k") or [1]) and metric.name != "accuracy":
        reasons.append(
            f"another k: published {metric.key()}, this eval measured k in {summary.get('pass_k')}"
        )
    categories = sorted((summary.get("categories") or {}).keys())
    if value.scope == OVERALL and metric.categories is not None and sorted(metric.categories) != categories:
        reasons.append(
            f"other categories: published over {sorted(metric.categories)}, this eval over {categories}"
        )
    if value.scope == OVERALL and metric.average == "categories":
        reasons += _per_category(summary)
    block = _block(summary, value.scope)
    if block is None:
        reasons.append(f"this eval has no category {value.scope} (it has {', '.join(categories) or 'none'})")
    elif value.tasks is not None and block.get("tasks") != value.tasks:
        reasons.append(
            f"another task count: published over {value.tasks} tasks, this eval over {block.get('tasks')}"
        )
    limit = (summary.get("dataset") or {}).get("limit_per_category")
    if limit is not None and value.tasks is None:
        reasons.append(f"a slice of the split (eval.limit_per_category={limit})")
    selected = (summary.get("dataset") or {}).get("categories")
    if selected is not None and value.scope == OVERALL and metric.categories is None and value.tasks is None:
        # The source averages over the whole split (it names no categories, nor a task count to check).
        reasons.append(f"a part of the split (eval.categories={selected}); the source's overall is all of it")
    return reasons


def _per_category(summary: Mapping[str, Any]) -> list[str]:
    """Why a published overall averaged per category does not compare with this eval's overall (an
    average over tasks): its categories have other task counts, so the two denominators weigh them
    otherwise. With equal counts the two means are one."""
    counts = {
        name: block.get("tasks")
        for name, block in (summary.get("categories") or {}).items()
        if isinstance(block, Mapping)
    }
    if len(set(counts.values())) <= 1:
        return []
    shown = ", ".join(f"{name} {tasks}" for name, tasks in sorted(counts.items()))
    return [
        "another average: the source's overall is the mean of its categories' values (each weighs the "
        f"same), this eval's is over tasks, and its categories have other task counts ({shown}): "
        "compare the categories' values"
    ]


def _settings(summary: Mapping[str, Any], metric: MetricDefinition) -> list[str]:
    """Each eval setting the source declares (SETTING_PARTS) against what the eval used, as its identity
    records it (a summary older than the part: its `sampling`, or its own keys)."""
    from t3rl_core.eval.published import SETTING_PARTS  # lazy: `t3rl runs` reads verdicts without pydantic

    identity, reasons = summary.get("identity") or {}, []
    for field, part in SETTING_PARTS.items():
        declared = getattr(metric, field)
        if field == "top_p" and metric.temperature == 0:
            continue  # greedy decoding ignores top-p: the identity records 1.0 for it (decoding_of)
        sources = (identity.get(part), summary.get("sampling"), summary)
        used = next((src[field] for src in sources if isinstance(src, Mapping) and field in src), None)
        if declared is None or used == declared:
            continue
        if field == "temperature":
            shown = "greedy (temperature 0)" if declared == 0 else f"temperature {declared:g}"
            reasons.append(f"another temperature: published {shown}, this eval samples at {used}")
        else:
            reasons.append(f"another {field}: published {declared}, this eval {used} (set eval.{field})")
    coverage = identity.get("coverage") or {}
    if coverage.get("unscored"):
        reasons.append(
            f"{coverage['unscored']} task(s) have no scored episode (the engine failed every one, within "
            "eval.max_engine_failure_rate): rerun them with --resume"
        )
    short = (coverage.get("short_of_k") or {}).get(str(metric.k)) if metric.name != "accuracy" else None
    if short:
        reasons.append(
            f"{short} task(s) have fewer than {metric.k} scored samples (the engine failed the others, "
            f"within eval.max_engine_failure_rate), so {metric.key()} averages over the other tasks: rerun "
            "them with --resume"
        )
    return reasons


def _block(summary: Mapping[str, Any], scope: str) -> Mapping[str, Any] | None:
    if scope == OVERALL:
        return summary.get(OVERALL)
    return (summary.get("categories") or {}).get(scope)


def _hash(value: str | None) -> str:
    return f"{value[:12]}…" if value else "unknown"


def headline(found: list[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The verdict a one-line view shows: the target's overall value (its first value without one);
    None without a target."""
    targets = [verdict for verdict in found if verdict["role"] == "target"]
    overall = [verdict for verdict in targets if verdict["scope"] == OVERALL]
    return (overall or targets or [None])[0]


def one_line(verdict: Mapping[str, Any]) -> str:
    """ "published 0.600 (T3RL stage 1 accuracy): not reproduced, −0.123 [0.431, 0.529]"."""
    head = f"published {verdict['published']:.3f} ({verdict['label']} {verdict['metric']})"
    status = verdict["status"]
    if status == NOT_COMPARABLE:
        return f"{head}: {status}: {verdict['why'][0]}"
    low, high = verdict["interval"]
    return f"{head}: {status}, {verdict['measured']:.3f} ({verdict['gap']:+.3f}) [{low:.3f}, {high:.3f}]"
