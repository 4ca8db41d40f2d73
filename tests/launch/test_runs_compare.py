"""Comparing runs: `t3rl runs diff A B` (keys with their sources) and `t3rl runs` with each eval stage's
metric and filters by name, status and config value."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs_diff import config_differences, source_of


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})


def test_runs_diff_names_each_differing_key_and_who_set_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert invoke("plan", "+experiment=stage1_bfcl", "--out", str(a)).exit_code == 0
    planned = invoke(
        "plan", "+experiment=stage1_bfcl", "reward=binary", "stages.train.curriculum.optimizer.lr=2e-6",
        "--out", str(b),
    )  # fmt: skip
    assert planned.exit_code == 0, planned.output
    provenance = json.loads((b / "provenance.json").read_text())
    assert source_of(provenance, "stages.train.curriculum.optimizer.lr").startswith("override `stages.train")
    result = invoke("runs", "diff", str(a), str(b))
    assert result.exit_code == 0, result.output
    assert "2 key(s) differ" in result.output
    assert "overrides only in B: reward=binary stages.train.curriculum.optimizer.lr=2e-6" in result.output
    lines = result.output.splitlines()
    reward = next(line for line in lines if line.startswith("│ reward.name"))
    assert "progress" in reward and "binary" in reward and "reward/progress.yaml" in reward
    assert "override `reward=binary`" in result.output
    assert "identical" in invoke("runs", "diff", str(a), str(a)).output
    assert invoke("runs", "diff", str(a), str(tmp_path / "nope")).exit_code == 1


def test_config_differences_cover_added_removed_and_nested_keys() -> None:
    found = config_differences({"a": {"b": 1, "c": 2}, "d": 3}, {"a": {"b": 1, "c": 5}, "e": [1]})
    assert (found[0].key, found[0].a, found[0].b) == ("a.c", 2, 5)
    assert [d.key for d in found] == ["a.c", "d", "e"]


def _run(root: Path, name: str, reward: str, status: str, accuracy: float | None) -> Path:
    path = root / name / "20260101-000000"
    path.mkdir(parents=True)
    config = {"name": name, "reward": {"name": reward}, "stages": {"data": {}, "eval": {}}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    stages = {"data": {"status": "succeeded", "fingerprint": "f", "run_id": "1"}}
    stages["eval"] = {"status": status, "fingerprint": "f", "run_id": "2"}
    (path / "state.json").write_text(json.dumps({"version": 1, "stages": stages}))
    if accuracy is not None:
        (path / "stages" / "eval").mkdir(parents=True)
        summary = {"overall": {"accuracy": accuracy, "tasks": 300, "reward": accuracy / 2}}
        (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary))
    return path


def test_runs_lists_each_eval_metric_and_filters(tmp_path: Path) -> None:
    _run(tmp_path, "stage1_bfcl", "binary", "succeeded", 0.4321)
    _run(tmp_path, "stage2_bfcl", "progress", "succeeded", 0.5)
    _run(tmp_path, "toolrl", "binary", "failed", None)
    everything = invoke("runs", "--runs-dir", str(tmp_path))
    assert everything.exit_code == 0, everything.output
    assert "3 runs" in everything.output and "eval 0.432 (n=300)" in everything.output
    binary = invoke("runs", "--runs-dir", str(tmp_path), "--where", "reward.name=binary")
    assert "2 runs" in binary.output and "stage2_bfcl" not in binary.output
    ok = invoke("runs", "--runs-dir", str(tmp_path), "--status", "succeeded", "--name", "stage*")
    assert "2 runs" in ok.output and "toolrl" not in ok.output
    reward = invoke("runs", "--runs-dir", str(tmp_path), "--name", "stage2*", "--metric", "overall.reward")
    assert "1 runs" in reward.output and "eval 0.250" in reward.output
