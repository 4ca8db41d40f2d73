"""sweep.png: the metric per point with a 95 % Wilson interval when it is a rate over episodes."""

from __future__ import annotations

import json
from pathlib import Path

from launch.run.sweep import Point, SweepSummary
from launch.run.sweep_plot import PLOT_FILE, plot_sweep, point_scores


def _summary(tmp_path: Path, metric_name: str) -> SweepSummary:
    summary = SweepSummary(sweep_dir=tmp_path, name="sweep-x", metric_name=metric_name)
    for index, (reward, accuracy) in enumerate([("progress", 0.4), ("binary", 0.55), ("toolrl", None)]):
        run_dir = tmp_path / f"p{index:02d}"
        (run_dir / "stages" / "eval").mkdir(parents=True)
        overall = {"accuracy": accuracy or 0.0, "episodes": 200, "reward": 0.3}
        (run_dir / "stages" / "eval" / "summary.json").write_text(json.dumps({"overall": overall}))
        summary.add(Point(index, (f"reward={reward}",), (f"reward={reward}",)))
        summary.update(
            index, run_dir=str(run_dir), metric=accuracy, status="succeeded" if accuracy else "failed"
        )
    return summary


def test_a_rate_metric_gets_each_points_episode_count_and_the_plot_is_linked(tmp_path: Path) -> None:
    summary = _summary(tmp_path, "eval: overall.accuracy")
    scores = point_scores(summary)
    assert [(s.label, s.metric, s.episodes) for s in scores] == [
        ("reward=progress", 0.4, 200),
        ("reward=binary", 0.55, 200),
    ]
    assert plot_sweep(summary) == tmp_path / PLOT_FILE
    assert (tmp_path / PLOT_FILE).read_bytes().startswith(b"\x89PNG")
    summary.write()
    assert f"![eval: overall.accuracy per point]({PLOT_FILE})" in (tmp_path / "sweep.md").read_text()


def test_a_metric_that_is_not_a_rate_gets_no_interval_and_no_points_no_plot(tmp_path: Path) -> None:
    summary = _summary(tmp_path, "eval: overall.reward")
    assert all(s.episodes is None for s in point_scores(summary))
    empty = SweepSummary(sweep_dir=tmp_path / "empty", name="sweep-y", metric_name=None)
    assert plot_sweep(empty) is None and not (tmp_path / "empty" / PLOT_FILE).exists()


def test_a_long_title_is_wrapped_inside_the_figure(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.figure import Figure

    summary = _summary(tmp_path, "eval_reference: categories.multi_turn_long_context.accuracy")
    summary.name = "sweep-20260101-000000-reward-and-learning-rate"
    titles = []
    save = Figure.savefig

    def measured(figure, *args, **kwargs):
        box = figure.axes[0].title.get_window_extent(figure.canvas.get_renderer())
        titles.append((figure.axes[0].title.get_text(), box.x0, box.x1, figure.bbox.width))
        return save(figure, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", measured)
    plot_sweep(summary)
    ((text, left, right, width),) = titles
    assert left >= 0 and right <= width, titles  # nothing clipped
    assert "\n" in text and text.replace("\n", " ").startswith(summary.name)


def test_the_final_table_says_why_each_point_failed() -> None:
    from rich.console import Console

    from launch.run.parallel import PointProgress
    from launch.run.sweep_view import points_table

    progress = {
        0: PointProgress(status="succeeded"),
        1: PointProgress(status="failed", stage="train", error="stage train: exit code 3 (see its log)"),
    }
    console = Console(record=True, width=250)
    console.print(points_table("sweep-x", {0: "lr=1e-6", 1: "lr=1e-5"}, progress, {0: 0.5}, "metric"))
    text = console.export_text()
    assert "reason" in text
    failed = next(line for line in text.splitlines() if "lr=1e-5" in line)
    assert "stage train: exit code 3 (see its log)" in failed
    console = Console(record=True, width=250)
    console.print(points_table("sweep-x", {0: "lr=1e-6"}, {0: progress[0]}, {0: 0.5}, "metric"))
    assert "reason" not in console.export_text()  # no point failed: no column for it
