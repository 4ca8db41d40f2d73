"""A sweep point that ends in any way other than success is recorded so, never left `running`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.sweep_watch import bare_sweep_dirs

SWEEP = ("run", "-m", "+experiment=stage1_bfcl", "reward=progress,binary", "executor=local")


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_RUNS_DIR", str(tmp_path / "runs"))
    # Preflight must refuse: no slime or Megatron checkout where the paths point.
    monkeypatch.setenv("SLIME_ROOT", str(tmp_path / "no-slime"))
    monkeypatch.setenv("MEGATRON_ROOT", str(tmp_path / "no-megatron"))
    return tmp_path / "runs"


def _sweep(runs: Path) -> tuple[dict, str]:
    (sweep_json,) = runs.rglob("sweep.json")
    return json.loads(sweep_json.read_text()), (sweep_json.parent / "sweep.md").read_text()


def test_a_preflight_refusal_fails_the_point_and_the_sweep_goes_on(runs: Path) -> None:
    result = CliRunner().invoke(app, list(SWEEP), env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    summary, markdown = _sweep(runs)
    assert [p["status"] for p in summary["points"]] == ["failed", "failed"]
    assert all(
        p["error"].startswith("this machine cannot run the plan; nothing was started: ")
        for p in summary["points"]
    )
    assert all(p["error"].endswith(" more)") and "\n" not in p["error"] for p in summary["points"])
    assert summary["metric"] == "eval: overall.accuracy"
    assert "metric: `eval: overall.accuracy`" in markdown
    assert "| eval: overall.accuracy |" in markdown and "failed: this machine cannot run" in markdown


def test_an_exception_in_a_point_fails_it_and_the_next_point_still_runs(
    runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def broken(plan, *args, **kwargs):
        calls.append(plan.run_dir.name)
        raise RuntimeError("executor exploded")

    monkeypatch.setattr("launch.run.sweep_runs.execute", broken)
    result = CliRunner().invoke(app, list(SWEEP), env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert calls == ["p00", "p01"]
    summary, _ = _sweep(runs)
    assert [(p["status"], p["error"]) for p in summary["points"]] == [
        ("failed", "RuntimeError: executor exploded")
    ] * 2


def test_a_signal_marks_the_point_interrupted_and_leaves_the_rest_planned(
    runs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # what SIGTERM and Ctrl-C become in `t3rl run`

    monkeypatch.setattr("launch.run.sweep_runs.execute", interrupted)
    result = CliRunner().invoke(app, list(SWEEP), env={"COLUMNS": "200"})
    assert result.exit_code == 130, result.output
    summary, markdown = _sweep(runs)
    assert [p["status"] for p in summary["points"]] == ["interrupted", "planned"]
    assert summary["launcher"]["pid"] > 0 and summary["launcher"]["host"]
    assert "interrupted: stopped by a signal" in markdown


def test_a_sweep_dir_never_exists_without_its_record(runs: Path) -> None:
    """A launcher killed at any moment leaves a sweep dir `t3rl run --run-dir` can resume (or none);
    a search's: tests/launch/test_search_refusals.py."""
    with bare_sweep_dirs(runs / "stage1_bfcl") as bare:
        result = CliRunner().invoke(app, list(SWEEP), env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output
    assert bare == []
    summary, _ = _sweep(runs)
    assert all(p["run_dir"] for p in summary["points"])
