"""A newcomer's first hour, round three: what the earlier passes left, found by following README.md and
the tutorials literally in a scratch clone.

- `t3rl runs | grep <run>` and `t3rl runs show DIR | grep <stage>` in a pipe or a log: rich's boxed table
  folded the run's name over two lines at 80 columns, so grep found nothing.
Each failed before.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.support.cli_app import invoke

RUN = "a_rather_long_experiment_name/20260101-000000"


def _run_dir(root: Path) -> Path:
    """A run dir whose eval stage wrote a summary (what `t3rl runs` reads of it)."""
    path = root / RUN
    (path / "stages" / "evaluate_the_reference").mkdir(parents=True)
    config = {"name": "a_rather_long_experiment_name", "stages": {"evaluate_the_reference": {"kind": "eval"}}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    summary = {"overall": {"accuracy": 0.5, "tasks": 4}}
    (path / "stages" / "evaluate_the_reference" / "summary.json").write_text(json.dumps(summary))
    return path


# ------------------------------------------- tables in a pipe keep each row on one line


def test_runs_in_a_pipe_keeps_each_run_on_one_line_grep_finds(here: Path) -> None:
    """Before: `quickstart/20 │ … │` then `261127-193819 │`: `t3rl runs | grep 20261127-193819` found none."""
    _run_dir(here / "runs")
    result = invoke(["runs", "--runs-dir", "runs"], COLUMNS="80")
    assert result.exit_code == 0, result.output
    found = [line for line in result.output.splitlines() if RUN in line]
    assert len(found) == 1, result.output
    assert "evaluate_the_reference 0.500 (n=4)" in found[0], result.output
    assert "┃" not in result.output and "│" not in result.output, result.output


def test_runs_show_in_a_pipe_keeps_each_stage_on_one_line(here: Path) -> None:
    path = _run_dir(here / "runs")
    result = invoke(["runs", "show", str(path)], COLUMNS="80")
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert ["evaluate_the_reference", "·", "planned"] in [row[:3] for row in rows], result.output
