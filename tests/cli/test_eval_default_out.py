"""`t3rl eval` without --out names its record by the second it started: two evals started in the same
second each get a record of their own (the second one rewrote the first one's config and summary)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.run.rundir import fresh_dir
from t3rl_core.eval.record_lock import record_lock


def test_two_evals_started_in_the_same_second_keep_separate_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outs: list[Path] = []

    def evaluate(runtime, config, data, out, **kwargs):
        outs.append(out)
        (out / "summary.json").write_text(f'{{"complete": true, "n": {len(outs)}}}')
        return {"complete": True}

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", evaluate)
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", lambda runtime, data_dir, split: data_dir)
    monkeypatch.setattr("launch.cli.eval_command.stamp_now", lambda: "20260101-000000")
    args = ["eval", "+experiment=quickstart", "--engine", "reference", f"paths.runs_dir={tmp_path / 'runs'}"]
    for _ in range(2):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    assert [p.name for p in outs] == ["eval-reference-20260101-000000", "eval-reference-20260101-000000-1"]
    assert [(p / "summary.json").read_text() for p in outs] == [
        '{"complete": true, "n": 1}',
        '{"complete": true, "n": 2}',
    ]


def test_a_fresh_dir_is_never_one_that_exists(tmp_path: Path) -> None:
    made = [fresh_dir(tmp_path / "a", "x") for _ in range(3)]
    assert [p.name for p in made] == ["x", "x-1", "x-2"]
    (tmp_path / "a" / "y").write_text("a file")
    assert fresh_dir(tmp_path / "a", "y").name == "y-1"


def test_an_eval_into_a_dir_another_eval_writes_is_refused_before_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl eval --out` at an eval stage's dir while the stage's eval runs: refused with a message
    (it was a traceback), and the stage's config is not rewritten."""
    out = tmp_path / "stage_eval"
    out.mkdir()
    (out / "config.yaml").write_text("the stage's\n")
    (out / "summary.json").write_text('{"complete": false}')
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    with record_lock(out):  # the stage's eval, writing its records
        result = CliRunner().invoke(
            app, ["eval", "+experiment=quickstart", "--engine", "reference", "--out", str(out)]
        )
    assert result.exit_code == 1, result.output
    assert "is being written by another eval still running" in " ".join(result.output.split())
    assert (out / "config.yaml").read_text() == "the stage's\n"
