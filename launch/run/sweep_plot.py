"""`sweep.png` beside `sweep.md`: the sweep's metric per point, with a 95 % Wilson interval when the
metric is a rate over the eval's tasks (accuracy, pass@k), so points are compared with their noise.

matplotlib is imported only when a sweep with at least one scored point ends.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launch.run.sweep import SweepSummary
from launch.run.sweep_compare import RATE_KEYS, count, unranked
from t3rl_core import outside_json
from t3rl_core.charts import pyplot
from t3rl_core.eval.metrics import wilson_interval

PLOT_FILE = "sweep.png"


@dataclass(frozen=True)
class PointScore:
    index: int
    label: str
    metric: float
    # Episodes the metric is a rate over; None when it is not a rate (no interval is drawn).
    episodes: int | None


def point_scores(summary: SweepSummary) -> list[PointScore]:
    """Every point that has a metric, with the episode count of its eval summary when it is a rate;
    points whose eval measured another benchmark than the sweep's reference are left out (sweep.md
    names what differs)."""
    stage, _, key = (summary.metric_name or "").rpartition(": ")
    rate = any(part in key.rsplit(".", 1)[-1] for part in RATE_KEYS)
    scores = []
    left_out = unranked(summary)
    for index in sorted(summary.points):
        record = summary.points[index]
        if record.metric is None or index in left_out:
            continue
        episodes = None
        if rate and stage and record.run_dir:
            episodes = _episodes(Path(record.run_dir) / "stages" / stage / "summary.json", key)
        scores.append(PointScore(index, " ".join(record.varying) or f"p{index:02d}", record.metric, episodes))
    return scores


def _episodes(path: Path, key: str) -> int | None:
    """What the interval is over: the eval's tasks (samples and repeats of one task are not independent),
    or its episodes in a summary that does not count tasks."""
    try:
        return count(outside_json.read_file(path), key)
    except (OSError, ValueError, AttributeError):
        return None


def plot_sweep(summary: SweepSummary) -> Path | None:
    """Write sweep.png (None when no point has a metric yet)."""
    scores = point_scores(summary)
    if not scores:
        return None
    plt = pyplot()

    lows, highs = [], []
    for score in scores:
        if score.episodes is None:
            lows.append(0.0)
            highs.append(0.0)
            continue
        low, high = wilson_interval(round(score.metric * score.episodes), score.episodes)
        lows.append(max(0.0, score.metric - low))
        highs.append(max(0.0, high - score.metric))
    positions = list(range(len(scores)))
    figure, axes = plt.subplots(figsize=(max(4.5, 1.1 * len(scores) + 2), 4.0))
    axes.errorbar(positions, [s.metric for s in scores], yerr=[lows, highs], fmt="o", capsize=4)
    for position, score in zip(positions, scores, strict=True):
        n = f"\nn={score.episodes}" if score.episodes else ""
        axes.annotate(f"{score.metric:.3f}{n}", (position, score.metric), textcoords="offset points",
                      xytext=(8, 0), fontsize=7, va="center")  # fmt: skip
    axes.set_xticks(positions, [s.label for s in scores], rotation=25, ha="right", fontsize=7)
    axes.set_ylabel(summary.metric_name or "metric")
    interval = " (95 % Wilson interval)" if any(s.episodes for s in scores) else ""
    left_out = sorted(unranked(summary))
    apart = f"; not shown, another benchmark: {', '.join(f'p{i:02d}' for i in left_out)}" if left_out else ""
    fit_title(axes, f"{summary.name}: {summary.metric_name or 'metric'} per point{interval}{apart}")
    figure.tight_layout()
    path = summary.sweep_dir / PLOT_FILE
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def fit_title(axes: Any, title: str) -> None:
    """`title` over `axes`, wrapped onto more lines until it is narrower than the figure (a sweep name
    and a dotted metric overflow a narrow figure, and the layout clips a title rather than shrink it)."""
    figure = axes.figure
    renderer = figure.canvas.get_renderer()
    width = len(title)
    while True:
        axes.set_title("\n".join(textwrap.wrap(title, width)), fontsize=9)
        if axes.title.get_window_extent(renderer).width <= 0.95 * figure.bbox.width or width <= 20:
            return
        width = int(width * 0.85)
