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
    reward = next(line for line in lines if line.startswith("reward.name "))  # a row of its own
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
    assert "1 run in" in reward.output and "eval 0.250" in reward.output


def test_a_filter_or_metric_that_can_match_nothing_is_refused_naming_it(tmp_path: Path) -> None:
    _run(tmp_path, "stage1_bfcl", "binary", "succeeded", 0.4321)
    cases = [
        (["--where", "reward.nme=binary"], "--where", "did you mean 'reward.name'"),
        (["--where", "nonsense"], "--where", "is not KEY=VALUE"),
        (["--metric", "overall.nosuch"], "--metric", "no number 'overall.nosuch'"),
        (["--metric", "overall.rewrd"], "--metric", "did you mean 'overall.reward'"),
        (["--status", "sucess"], "--status", "did you mean 'succeeded'"),
    ]
    for args, argument, said in cases:
        result = invoke("runs", "--runs-dir", str(tmp_path), *args)
        assert result.exit_code == 2, (args, result.output)
        assert argument in result.output and said in result.output, (args, result.output)
    # A metric every listed summary has, and a key every config has, are fine even when nothing matches.
    assert invoke("runs", "--runs-dir", str(tmp_path), "--metric", "overall.tasks").exit_code == 0
    assert invoke("runs", "--runs-dir", str(tmp_path), "--where", "reward.name=x").exit_code == 0


def test_runs_that_differ_only_in_a_masked_secret_differ(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for out, token in ((a, "hf_planted_one_11aa"), (b, "hf_planted_two_22bb"), (c, "hf_planted_one_11aa")):
        planned = invoke(
            "plan", "+experiment=quickstart", f"++hardware.env_vars.HF_TOKEN={token}", "--out", str(out)
        )
        assert planned.exit_code == 0, planned.output
    assert (a / "config.yaml").read_text() == (b / "config.yaml").read_text()  # both say ***
    differ = invoke("runs", "diff", str(a), str(b))
    assert differ.exit_code == 0 and "differ (secret)" in differ.output, differ.output
    assert "hardware.env_vars.HF_TOKEN" in differ.output and "identical" not in differ.output
    assert "identical" in invoke("runs", "diff", str(a), str(c)).output
    assert not [p for p in (a, b) for f in p.rglob("*") if f.is_file() and b"hf_planted" in f.read_bytes()]


def test_a_standalone_eval_is_an_eval_record_runs_lists(tmp_path: Path, monkeypatch) -> None:
    def evaluate(runtime, config, data, out, **kwargs):
        summary = {"complete": True, "overall": {"accuracy": 0.75, "tasks": 4}}
        (out / "summary.json").write_text(json.dumps(summary))
        return summary

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", evaluate)
    # The stand-in evaluate reads no tokenizer: the synthetic model need not be built first.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "bfcl_test.jsonl"
    row = {"prompt": [{"role": "user", "content": "x"}], "metadata": {"index": "multi_turn_base_0"}}
    data.write_text(
        json.dumps({**row, "metadata": {**row["metadata"], "data_source": "multi_turn_base"}}) + "\n"
    )
    out = tmp_path / "runs" / "eval-reference-20260101-000000"
    result = invoke(
        "eval", "+experiment=quickstart", "--engine", "reference", "--data", str(data), "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "stages" not in yaml.safe_load((out / "config.yaml").read_text())  # it ran none of them
    listed = invoke("runs", "--runs-dir", str(tmp_path / "runs"))
    line = next(line for line in listed.output.splitlines() if "eval-reference-20260101-000000" in line)
    assert "✓ succeeded" in line and "✓ eval" in line and "eval 0.750 (n=4)" in line, listed.output
    shown = invoke("runs", "show", str(out))
    assert shown.exit_code == 0 and "prepare_data" not in shown.output and "eval_tiny" not in shown.output
    assert "✓ succeeded" in shown.output


def test_runs_show_of_a_cpu_run_lists_no_gpu_hardware(tmp_path: Path) -> None:
    assert invoke("plan", "+experiment=quickstart", "--out", str(tmp_path / "q")).exit_code == 0
    shown = invoke("runs", "show", str(tmp_path / "q"))
    assert shown.exit_code == 0, shown.output
    assert "hardware   none: every stage runs on the CPU" in shown.output and "h200x8" not in shown.output
