"""The sweep's live table and a stage's live bar as a terminal shows them: rendered by rich on a
Console forced into terminal mode and recorded, then read back as text frame by frame."""

from __future__ import annotations

import io
import re

from rich.console import Console

from launch.run.parallel import PointProgress
from launch.run.stage_progress import LiveStageOutput
from launch.run.sweep_view import live_points

LABELS = {0: "lr=1e-6", 1: "lr=2e-6"}


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=110, record=True, color_system=None), out


def _row(frame: str, index: int) -> list[str]:
    """The cells of point `index`'s row in a rendered table."""
    for line in frame.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if cells and cells[0] == str(index):
            return cells
    raise AssertionError(f"no row {index} in:\n{frame}")


def test_the_sweep_table_is_redrawn_as_each_point_changes() -> None:
    console, _ = _terminal()
    metrics: dict[int, float | None] = {}
    frames = []
    with live_points(console, "sweep: 2 points, all at once", LABELS, "overall.accuracy", metrics) as show:
        points = {0: PointProgress(), 1: PointProgress()}
        points[0].status, points[0].stage, points[0].job = "running", "train", "t3rl-p00-train-1"
        show(points)
        frames.append(console.export_text())
        points[1].status, points[1].stage = "waiting", ""
        show(points)
        frames.append(console.export_text())
        points[0].status, points[0].stage = "succeeded", "eval"
        metrics[0] = 0.4375
        points[1].status, points[1].stage = "failed", "prepare_data"
        show(points)
        frames.append(console.export_text())

    assert "sweep: 2 points, all at once" in frames[0] and "overall.accuracy" in frames[0]
    assert _row(frames[0], 0)[1:5] == ["lr=1e-6", "running", "train", "t3rl-p00-train-1"]
    assert _row(frames[0], 1)[1:3] == ["lr=2e-6", "planned"]
    assert _row(frames[1], 1)[2] == "waiting"
    final_0, final_1 = _row(frames[2], 0), _row(frames[2], 1)
    assert final_0[2] == "succeeded" and final_0[-1] == "0.4375"
    assert final_1[2:4] == ["failed", "prepare_data"] and final_1[-1] == ""


def test_not_on_a_terminal_the_sweep_prints_one_line_per_change_with_the_metric() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=110)
    metrics: dict[int, float | None] = {}
    with live_points(console, "sweep", LABELS, "overall.accuracy", metrics) as show:
        points = {0: PointProgress(status="running", stage="eval"), 1: PointProgress()}
        show(points)
        show(points)  # nothing changed: no line
        points[0].status = "succeeded"
        metrics[0] = 0.5
        show(points)
    assert out.getvalue().splitlines() == [
        "point 0 (lr=1e-6): running eval",
        "point 0 (lr=1e-6): succeeded eval overall.accuracy=0.5",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _bar_text(echo: LiveStageOutput) -> str:
    """The bar as the terminal shows it now (rendered off screen at the output's width)."""
    console = Console(file=io.StringIO(), force_terminal=True, width=110, record=True, color_system=None)
    console.print(echo._progress)
    return console.export_text()


def test_the_stage_bar_shows_counts_and_what_is_counted_as_lines_arrive() -> None:
    echo = LiveStageOutput(_Terminal(), "eval_tiny")
    echo.write("eval progress: 3/40 episodes, accuracy 0.667, ETA 30s\n")
    first = _bar_text(echo)
    assert "eval_tiny" in first and "3/40" in first and "accuracy 0.667" in first
    echo.write("eval progress: 40/40 episodes, accuracy 0.550\n")
    last = _bar_text(echo)
    assert "40/40" in last and "accuracy 0.550" in last and "3/40" not in last
    echo.close()

    data = LiveStageOutput(_Terminal(), "prepare_data")
    data.write("data progress: 200/800 rows built, ETA 2s\n")
    assert "200/800" in _bar_text(data) and "rows built" in _bar_text(data)
    data.write("data progress: 1050/2100 rows written, ETA 1s\n")
    shown = _bar_text(data)
    assert "1050/2100" in shown and "rows written" in shown and "rows built" not in shown
    data.close()


def test_the_stage_bar_shows_slimes_rollout_and_step_counters() -> None:
    echo = LiveStageOutput(_Terminal(), "train")
    echo.write("[x] rollout.py:120 - rollout 3: {'rollout/raw_reward': 0.42}\n")
    assert "rollout 3" in _bar_text(echo)
    echo.write("[x] train.py:88 - step 17: {'train/loss': 0.1}\n")
    assert "rollout 3, train step 17" in _bar_text(echo)
    echo.close()
