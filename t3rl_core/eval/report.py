"""The human-readable side of an eval: `report.md` and a per-category bar chart, from `summary.json`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t3rl_core.atomic_files import atomic_write_text
from t3rl_core.charts import pyplot
from t3rl_core.eval.metrics import OVERALL, rate_count, wilson_interval
from t3rl_core.eval.report_sections import sections
from t3rl_core.markdown_cells import table as _table
from t3rl_core.secret import mask_revealed

STATUSES = ("completed", "truncated", "aborted", "failed", "parse_error")
REPORT_FILE = "report.md"
CHART_FILE = "accuracy_by_category.png"
PASS_AT_K_FILE = "pass_at_k.png"


def write_report(summary: dict[str, Any], out_dir: Path) -> Path:
    """Write report.md and its charts next to it; returns the report's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_categories(summary, out_dir / CHART_FILE)
    curves = plot_pass_at_k(summary, out_dir / PASS_AT_K_FILE)
    path = out_dir / REPORT_FILE
    # A reason or a model's address may quote a credential, as in summary.json: masked the same way.
    atomic_write_text(path, mask_revealed(render_markdown(summary, pass_at_k_chart=curves)))
    return path


def render_markdown(summary: dict[str, Any], *, pass_at_k_chart: bool = False) -> str:
    ks = summary.get("pass_k", [])
    columns = ["category", "tasks", "episodes", "engine_failures", "accuracy", "progress", "reward"]
    columns += [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
    intervals = [f"[{b.low:.3f}, {b.high:.3f}]" for b in chart_bars(summary)]
    rows = [
        [name, *_cells(block, columns[1:]), interval]
        for (name, block), interval in zip(summary["categories"].items(), intervals, strict=False)
    ]
    overall = [*_cells(summary[OVERALL], columns[1:]), intervals[-1]]
    rows.append([f"**{OVERALL}**", *(f"**{cell}**" for cell in overall)])
    columns.append("accuracy 95 % CI (Wilson)")

    status_names = [*STATUSES, *(s for s in sorted(summary[OVERALL]["statuses"]) if s not in STATUSES)]
    status_rows = [
        [name, *(str(block["statuses"].get(s, 0)) for s in status_names)]
        for name, block in [*summary["categories"].items(), (OVERALL, summary[OVERALL])]
    ]
    engine = summary.get("engine", {})
    lines = [
        f"# Evaluation: `{summary.get('split', '?')}` with engine `{engine.get('name', '?')}`",
        "",
        f"- model: {model_label(summary)}",
        f"- data: `{summary.get('data', '?')}`",
        f"- samples per task: {summary.get('samples', '?')}, temperature {summary.get('temperature', '?')}",
        f"- episodes: {summary[OVERALL]['episodes']} over {summary[OVERALL]['tasks']} tasks"
        f" in {summary.get('wall_time_s', 0.0):.1f} s",
    ]
    if not summary.get("complete", True):
        reason = summary.get("reason") or "the run stopped before every episode finished"
        lines.append(f"- **incomplete — do not use these numbers**: {reason}")
    lines += [
        "",
        "Accuracy is the share of episodes that pass the environment's checker (per task, then averaged);",
        "progress is the mean share of correct turns. pass@k / pass^k are unbiased estimates from the",
        "samples of each task. Episodes the engine failed (`aborted`: no answer) are not scored.",
        "",
        *_table(columns, rows),
        "",
        "## Episode statuses",
        "",
        *_table(["category", *status_names], status_rows),
        "",
        *sections(summary),
        *_evaluated(summary),
        f"![accuracy by category]({CHART_FILE})",
        "",
        *([f"![pass@k]({PASS_AT_K_FILE})", ""] if pass_at_k_chart else []),
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class CategoryBar:
    """One group of bars of the chart: a category (or overall) with its n and accuracy's interval."""

    name: str
    tasks: int  # the tasks the accuracy averages over: its interval's n
    accuracy: float
    low: float
    high: float
    progress: float


def chart_bars(summary: dict[str, Any]) -> list[CategoryBar]:
    """Per category, overall last: accuracy with its 95 % Wilson interval over the tasks it averages."""
    bars = []
    for name, block in [*summary["categories"].items(), (OVERALL, summary[OVERALL])]:
        # Over the tasks the accuracy averages (metrics.rate_count), as every other interval of it is: the
        # scored episodes gave a narrower one here than `t3rl runs diff` and Too small to tell gave (a
        # task's samples are no independent draws), and a task the engine failed is no evidence either way.
        tasks = rate_count(block, "accuracy") or 0
        accuracy = float(block.get("accuracy") or 0.0)
        low, high = wilson_interval(round(accuracy * tasks), tasks)
        bars.append(
            CategoryBar(
                name.removeprefix("multi_turn_"), tasks, accuracy, low, high, block.get("progress") or 0.0
            )
        )
    return bars


def error_bars(bars: list[CategoryBar]) -> list[list[float]]:
    """matplotlib's yerr (below, above) of the accuracy bars. The interval is over round(accuracy · n)
    passes while accuracy is averaged per task first, so a bar may sit a little outside its interval:
    that side gets no whisker rather than a negative one (which matplotlib refuses)."""
    return [[max(0.0, b.accuracy - b.low) for b in bars], [max(0.0, b.high - b.accuracy) for b in bars]]


def model_label(summary: dict[str, Any]) -> str:
    """What was evaluated, in a few words: the model path or server, else the engine's name."""
    engine = summary.get("engine", {})
    model = summary.get("model") or {}
    found = (
        model.get("served_model") or model.get("model_path") or engine.get("model_path") or engine.get("url")
    )
    name = engine.get("name", "?")
    if not found:
        return "scripted gold policy" if name == "reference" else f"engine {name}"
    return f"{Path(str(found)).name or found} ({name})"


def chart_title(summary: dict[str, Any]) -> str:
    return f"{model_label(summary)} on {summary.get('split', '?')}"


def _evaluated(summary: dict[str, Any]) -> list[str]:
    """The "what was evaluated" section: model, checkpoint, sampling, dataset, code."""
    model = summary.get("model") or {}
    checkpoint = model.get("checkpoint") or {}
    dataset = summary.get("dataset") or {}
    git = summary.get("git") or {}
    pipeline = summary.get("pipeline")
    facts = [
        ("engine", model.get("engine") or summary.get("engine", {}).get("name")),
        ("url", model.get("url")),
        ("served model (from the server)", model.get("served_model")),
        ("model path", model.get("model_path")),
        ("policy", model.get("policy")),
        ("checkpoint", checkpoint.get("path")),
        ("checkpoint fingerprint", checkpoint.get("fingerprint")),
        ("checkpoint produced by", _stage(checkpoint.get("produced_by"))),
        ("pipeline run / stage", _stage(pipeline)),
        ("sampling", ", ".join(f"{k}={v}" for k, v in (summary.get("sampling") or {}).items())),
        ("dataset", f"{dataset.get('split')} `{dataset.get('path')}`" if dataset else None),
        ("dataset sha256", dataset.get("sha256")),
        ("git", f"{git.get('sha')}{' (dirty)' if git.get('dirty') else ''}" if git.get("sha") else None),
    ]
    rows = [[name, f"`{value}`" if "`" not in str(value) else str(value)] for name, value in facts if value]
    return ["## What was evaluated", "", *_table(["", ""], rows), ""]


def _stage(record: dict[str, Any] | None) -> str | None:
    return f"{record['run_dir']} · {record['stage']}" if record else None


def plot_categories(summary: dict[str, Any], path: Path) -> None:
    """Bars of accuracy (with 95 % Wilson intervals) and progress per category, overall last; each
    category's n under its name. Zero bars keep a visible outline and their value label."""
    plt = pyplot()

    bars = chart_bars(summary)
    positions = list(range(len(bars)))
    width = 0.38
    figure, axes = plt.subplots(figsize=(max(4.5, 1.5 * len(bars)), 3.9))
    drawn = axes.bar(
        [p - width / 2 for p in positions],
        [b.accuracy for b in bars],
        width,
        yerr=error_bars(bars),
        capsize=3,
        edgecolor="black",
        linewidth=0.6,
        label="accuracy (95 % Wilson interval)",
    )
    axes.bar_label(drawn, fmt="%.2f", fontsize=8, padding=2)
    drawn = axes.bar(
        [p + width / 2 for p in positions],
        [b.progress for b in bars],
        width,
        edgecolor="black",
        linewidth=0.6,
        label="progress",
    )
    axes.bar_label(drawn, fmt="%.2f", fontsize=8, padding=2)
    axes.set_xticks(positions, [f"{b.name}\nn={b.tasks}" for b in bars], fontsize=8)
    axes.axhline(0, color="black", linewidth=0.8)
    axes.set_ylim(0, 1.25)
    axes.set_ylabel("score")
    axes.set_title(chart_title(summary), fontsize=10)
    axes.legend(loc="upper left", ncol=2, fontsize=8, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def plot_pass_at_k(summary: dict[str, Any], path: Path) -> bool:
    """pass@k against k per category (overall bold), when more than one k was measured; False if not."""
    ks = [k for k in summary.get("pass_k", []) if summary[OVERALL].get(f"pass@{k}") is not None]
    if len(ks) < 2:
        return False
    plt = pyplot()

    figure, axes = plt.subplots(figsize=(5.0, 3.6))
    for name, block in [*summary["categories"].items(), (OVERALL, summary[OVERALL])]:
        values = [block.get(f"pass@{k}") for k in ks]
        if any(v is None for v in values):
            continue
        bold = name == OVERALL
        axes.plot(
            ks,
            values,
            marker="o",
            linewidth=2.2 if bold else 1.0,
            color="black" if bold else None,
            label=f"{name.removeprefix('multi_turn_')} (tasks={block.get('tasks')})",
        )
    axes.set_xticks(ks)
    axes.set_xlabel("k (samples)")
    axes.set_ylabel("pass@k")
    axes.set_ylim(0, 1.05)
    axes.set_title(f"pass@k · {chart_title(summary)}", fontsize=10)
    axes.legend(fontsize=7, frameon=False)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return True


def _cells(block: dict[str, Any], keys: list[str]) -> list[str]:
    return [_fmt(block.get(key)) for key in keys]


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
