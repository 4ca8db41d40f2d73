"""`t3rl runs` and `t3rl runs show` over run dirs written by the real pipeline (local executor)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import run_dir_lock, run_pipeline
from launch.run.rundir import RunDir


def _run(runs: Path, name: str, commands: list[str]) -> RunDir:
    run_dir = RunDir.new(runs, name, stamp="20260101-000000")
    stages = tuple(Stage(name=f"s{i}", kind="prepare_data", commands=(c,)) for i, c in enumerate(commands))
    run_dir.write_config(
        yaml.safe_dump({"name": name, "stages": {s.name: {} for s in stages}}), [f"+experiment={name}"]
    )
    run_dir.write_manifest(
        {"run_id": run_dir.id, "created_at": "2026-01-01T00:00:00+00:00", "overrides": ["x=1"]}
    )
    run_pipeline(
        Plan(name=name, run_dir=run_dir.path, stages=stages), run_dir, LocalExecutor(out=io.StringIO())
    )
    return run_dir


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_runs_lists_every_run_with_its_stage_marks(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _run(runs, "good", ["true", "true"])
    _run(runs, "bad", ["true", "echo boom; exit 3", "true"])
    code, out = _invoke("runs", "--runs-dir", str(runs))
    assert code == 0, out
    assert "2 runs in" in out
    good = next(line for line in out.splitlines() if "good/20260101-000000" in line)
    bad = next(line for line in out.splitlines() if "bad/20260101-000000" in line)
    assert "✓ succeeded" in good and good.count("✓") == 3
    assert "✗ failed" in bad and "✓ s0" in bad and "✗ s1" in bad and "· s2" in bad


def test_show_prints_the_manifest_and_each_stage_record(tmp_path: Path) -> None:
    bad = _run(tmp_path / "runs", "bad", ["true", "exit 3", "true"])
    code, out = _invoke("runs", "show", str(bad.path))
    assert code == 0, out
    assert "bad/20260101-000000" in out and "x=1" in out
    s1 = next(line for line in out.splitlines() if line.strip("│ ").startswith("s1"))
    assert "failed" in s1 and "exit code 3" in s1
    code, out = _invoke("runs", "show", str(tmp_path))
    assert code == 1 and "not a t3rl run dir" in out


def test_a_running_stage_without_its_t3rl_process_is_interrupted(tmp_path: Path) -> None:
    run = _run(tmp_path / "runs", "r", ["true"])
    state = json.loads(run.state_file.read_text())
    state["stages"]["s0"]["status"] = "running"
    run.state_file.write_text(json.dumps(state))
    _, out = _invoke("runs", "--runs-dir", str(tmp_path / "runs"))
    assert "! interrupted" in out
    with run_dir_lock(run):  # a live t3rl process holds the lock
        _, out = _invoke("runs", "--runs-dir", str(tmp_path / "runs"))
    assert "▶ running" in out
