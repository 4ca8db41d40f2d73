"""The sections of report.md about comparing results: the verdict on the recipe's published results,
failures by whose fault, variance across repeats, what each category's size can resolve, the benchmark's
identity and the attempts an eval took. Each reads summary.json only (older summaries lack some parts,
and their sections are left out)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t3rl_core.eval.metrics import OVERALL, rate_count, wilson_interval
from t3rl_core.markdown_cells import one_line, table

# A category whose 95 % interval is wider than this on each side is called out as too small.
SMALL_RESOLUTION = 0.1


def sections(summary: Mapping[str, Any]) -> list[str]:
    return [
        *published_section(summary),
        *failures_section(summary),
        *repeats_section(summary),
        *resolution_section(summary),
        *identity_section(summary),
    ]


def published_section(summary: Mapping[str, Any]) -> list[str]:
    found = (summary.get("published") or {}).get("verdicts") or []
    if not found:
        return []
    rows = []
    for verdict in found:
        interval = verdict.get("interval")
        rows.append(
            [
                f"{verdict['label']} ({verdict['role']})",
                verdict["model"],
                verdict["scope"],
                verdict["definition"],
                f"{verdict['published']:.3f}",
                _number(verdict.get("measured")),
                f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "–",
                f"{verdict['gap']:+.3f}" if verdict.get("gap") is not None else "–",
                f"**{verdict['status']}**",
                "; ".join(verdict.get("why") or []) or _resolution_note(verdict),
            ]
        )
    tolerance = (summary.get("published") or {}).get("tolerance") or {}
    sources = sorted({f"{v['label']}: {v['source']}" for v in found})
    return [
        "## Published results",
        "",
        "Reproduced when the published value lies inside this eval's "
        f"{tolerance.get('confidence', 0.95):.0%} interval over the scope's tasks"
        + (f" (± {tolerance['margin']:g} margin)" if tolerance.get("margin") else "")
        + "; not comparable when the eval measured something else (the reason is given).",
        "",
        *table(
            [
                "result",
                "model",
                "scope",
                "metric",
                "published",
                "measured",
                "interval",
                "gap",
                "verdict",
                "why",
            ],
            rows,
        ),
        "",
        *(f"- {source}" for source in sources),
        "",
    ]


def _resolution_note(verdict: Mapping[str, Any]) -> str:
    """A reproduction on few tasks is a weak one: say what it could not have seen."""
    resolution = verdict.get("resolution")
    if verdict.get("status") != "reproduced" or resolution is None or resolution <= SMALL_RESOLUTION:
        return ""
    return (
        f"{verdict.get('tasks')} tasks resolve ±{resolution:.3f} only: a difference up to that "
        "would also count as reproduced"
    )


def failures_section(summary: Mapping[str, Any]) -> list[str]:
    blocks = _blocks(summary)
    if not all("failures" in block for _, block in blocks):
        return []
    with_user = any(block["failures"].get("user_simulator") for _, block in blocks) or bool(
        (summary.get("identity") or {}).get("user_simulator")
    )
    header = ["category", "failed", "agent", "parse", "infrastructure"]
    if with_user:
        header += ["user simulator", "accuracy", "accuracy without user-simulator failures"]
    rows = []
    for name, block in blocks:
        failures = block["failures"]
        row = [name, str(sum(failures.values())), *(str(failures.get(k, 0)) for k in header[2:5])]
        if with_user:
            row += [
                str(failures.get("user_simulator", 0)),
                _number(block.get("accuracy")),
                _number(block.get("accuracy_without_user_simulator")),
            ]
        rows.append(row)
    return [
        "## Failures by whose fault",
        "",
        "Every failed episode is attributed (its record's `attribution` holds the rule and the evidence): "
        "the agent (a wrong answer, or output the protocol could not read: parse), the infrastructure "
        "(engine failures, crashes, a failing sandbox)"
        + (
            ", or the user simulator (ended early, asked the agent to act for it, contradicted its "
            "scenario, hit its own error)."
            if with_user
            else "."
        ),
        "",
        *table(header, rows),
        "",
    ]


def repeats_section(summary: Mapping[str, Any]) -> list[str]:
    repeats = summary.get("repeats") or {}
    if (repeats.get("count") or 1) < 2:
        return []
    ks = summary.get("pass_k") or [1]
    keys = ["accuracy", *(f"pass@{k}" for k in ks if k > 1), *(f"pass^{k}" for k in ks if k > 1)]
    rows = []
    for name, stats in [*(repeats.get("categories") or {}).items(), (OVERALL, repeats.get(OVERALL) or {})]:
        cells = [name]
        for key in keys:
            entry = stats.get(key) or {}
            values = ", ".join(_number(v) for v in entry.get("values") or [])
            spread = f" ± {entry['std']:.3f}" if entry.get("std") is not None else ""
            cells.append(f"{_number(entry.get('mean'))}{spread} ({values})")
        cells.append(_number(stats.get("agreement")))
        rows.append(cells)
    return [
        f"## Variance across {repeats['count']} repeats",
        "",
        "Each repeat is the whole eval again with seed eval.seed + r. Mean ± standard deviation (the "
        "repeats' values); agreement is the share of tasks whose success rate was the same in every repeat.",
        "",
        *table(["category", *(f"{k} mean ± std (each)" for k in keys), "per-task agreement"], rows),
        "",
        *_left_out_note((repeats.get(OVERALL) or {}).get("left_out")),
    ]


def _left_out_note(count: Any) -> list[str]:
    if not count:
        return []
    return [
        f"{count} task(s) were not scored in every repeat (the engine failed them in some): each repeat's "
        "value leaves them out, so that the repeats differ by their seeds alone.",
        "",
    ]


def resolution_section(summary: Mapping[str, Any]) -> list[str]:
    """Categories too small to tell apart the differences they show (between repeats, or from a
    published value) at 95 %."""
    lines = []
    repeats = (summary.get("repeats") or {}).get("categories") or {}
    for name, block in _blocks(summary):
        tasks = rate_count(block, "accuracy") or 0  # the tasks the accuracy averages over
        accuracy = block.get("accuracy")
        if not tasks or accuracy is None:
            continue
        low, high = wilson_interval(round(accuracy * tasks), tasks)
        half = (high - low) / 2
        if half <= SMALL_RESOLUTION:
            continue
        spread = _spread(repeats.get(name) or {})
        shown = f"; its repeats differ by {spread:.3f}, within that noise" if spread and spread < half else ""
        lines.append(
            f"- **{one_line(name)}**: {tasks} tasks resolve accuracy to ±{half:.3f} (95 %): a difference "
            f"smaller than that between two runs, or from a published value, is noise{shown}."
        )
    if not lines:
        return []
    return ["## Too small to tell", "", *lines, ""]


def _spread(stats: Mapping[str, Any]) -> float | None:
    values = [v for v in (stats.get("accuracy") or {}).get("values") or [] if isinstance(v, int | float)]
    return max(values) - min(values) if len(values) > 1 else None


def _commits(commits: Any) -> str | None:
    """Each attempt's t3rl commit, when the episodes came from more than one (a resume under another)."""
    if not isinstance(commits, Mapping) or len(set(commits.values())) < 2:
        return None
    return ", ".join(f"attempt {attempt}: {commit or 'unknown'}" for attempt, commit in commits.items())


def identity_section(summary: Mapping[str, Any]) -> list[str]:
    identity = summary.get("identity")
    if not identity:
        return []
    scorer = identity.get("scorer") or {}
    user = identity.get("user_simulator")
    env = identity.get("env") or {}
    attempts = summary.get("attempts") or {}
    by_attempt = attempts.get("episodes_by_attempt") or {}
    rerun = attempts.get("rerun") or {}
    facts = [
        ("scorer", f"{scorer.get('package')} {scorer.get('version') or '(version unknown)'}"),
        *(
            (f"data sha256 ({split})", digest or "unknown")
            for split, digest in (identity.get("data") or {}).items()
        ),
        ("selection", _pairs(identity.get("selection"))),
        ("success", (identity.get("metric") or {}).get("success")),
        ("metric definition", f"version {(identity.get('metric') or {}).get('version')}"),
        ("user simulator", _pairs(user)),
        ("scorer sources sha256", scorer.get("source_sha256")),
        ("env", f"{env.get('name')} config sha256 {env.get('config_sha256')}"),
        *((part, _pairs(identity.get(part))) for part in ("budget", "decoding", "protocol", "coverage")),
        ("episodes by attempt", ", ".join(f"attempt {a}: {n}" for a, n in by_attempt.items()) or None),
        (
            "ran again on resume",
            ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in rerun.items()) or None,
        ),
        ("t3rl commit by attempt", _commits(attempts.get("commits"))),
    ]
    rows = [[name, f"`{value}`"] for name, value in facts if value]
    return [
        "## Benchmark identity",
        "",
        "Results compare only when all of this is equal "
        "(`t3rl runs`, `runs diff` and sweeps refuse otherwise).",
        "",
        *table(["", ""], rows),
        "",
    ]


def _pairs(part: Any) -> str | None:
    return ", ".join(f"{k}={v}" for k, v in part.items()) if isinstance(part, Mapping) else None


def _blocks(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [*(summary.get("categories") or {}).items(), (OVERALL, summary.get(OVERALL) or {})]


def _number(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"
