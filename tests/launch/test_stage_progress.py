"""Live progress inside stages: an eval's progress lines and slime's rollout/step lines become one bar
on a terminal; every line is printed as it is elsewhere."""

from __future__ import annotations

import io

from launch.run.stage_progress import LiveStageOutput, StageProgress
from t3rl_core.eval.runner import ProgressLines

SLIME = "[2026-01-01 10:00:00] rollout.py:120 - rollout 3: {'rollout/raw_reward': 0.42}\n"


def test_progress_lines_are_parsed_from_eval_and_slime_output() -> None:
    state = StageProgress()
    assert state.feed("eval progress: 12/40 episodes, accuracy 0.500, ETA 82s\n") == "eval"
    assert (state.done, state.total, state.accuracy) == (12, 40, 0.5)
    assert state.feed(SLIME) == "train" and state.rollout == 3
    assert state.feed("[x] data.py:88 - step 17: {'train/loss': 0.1}\n") == "train" and state.step == 17
    assert state.feed("some other line with step 3 in it\n") is None
    assert state.describe() == "accuracy 0.500, rollout 3, train step 17"


def test_not_a_terminal_every_line_is_echoed_as_it_is() -> None:
    out = io.StringIO()
    echo = LiveStageOutput(out, "eval")
    for line in ("starting\n", "eval progress: 1/4 episodes, accuracy 1.000, ETA 3s\n", SLIME):
        echo.write(line)
    echo.close()
    assert out.getvalue() == "starting\neval progress: 1/4 episodes, accuracy 1.000, ETA 3s\n" + SLIME


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_eval_progress_drives_a_bar_instead_of_scrolling() -> None:
    out = _Terminal()
    echo = LiveStageOutput(out, "eval_tiny")
    echo.write("loading the model\n")
    echo.write("eval progress: 3/4 episodes, accuracy 0.667, ETA 1s\n")
    assert echo._progress.tasks[0].completed == 3 and echo._progress.tasks[0].total == 4
    echo.close()
    text = out.getvalue()
    assert "loading the model" in text and "eval progress:" not in text


def test_data_progress_lines_are_parsed_phase_by_phase() -> None:
    state = StageProgress()
    assert state.feed("data progress: 120/800 rows built, ETA 3s\n") == "data"
    assert (state.done, state.total, state.what) == (120, 800, "rows built")
    assert state.feed("data progress: 0/2100 rows written\n") == "data"
    assert (state.done, state.total, state.what) == (0, 2100, "rows written")
    assert state.describe() == "rows written"
    assert state.feed("preparing data progress: 1/2 rows\n") is None  # only a line that starts so


def test_on_a_terminal_data_progress_drives_the_bar_instead_of_scrolling() -> None:
    out = _Terminal()
    echo = LiveStageOutput(out, "prepare_data")
    echo.write("data: preparing\n")
    echo.write("data progress: 400/800 rows built, ETA 2s\n")
    task = echo._progress.tasks[0]
    assert (task.completed, task.total, task.fields["detail"]) == (400, 800, "rows built")
    echo.write("data progress: 700/2100 rows written, ETA 1s\n")
    assert (task.completed, task.total, task.fields["detail"]) == (700, 2100, "rows written")
    echo.close()
    text = out.getvalue()
    assert "data: preparing" in text and "data progress:" not in text


def test_eval_prints_a_line_every_5_percent_and_at_the_end(capsys) -> None:
    lines = ProgressLines(total=40, done=0, every_s=3600)
    records = []
    for i in range(40):
        records.append({"success": i % 2 == 0})
        lines.advance(records)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 20 and printed[0].startswith("eval progress: 2/40 episodes, accuracy 0.500, ETA ")
    assert printed[-1] == "eval progress: 40/40 episodes, accuracy 0.500"
