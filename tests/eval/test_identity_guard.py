"""Results of different benchmark identity are never ranked side by side: `t3rl runs` (hidden, the part
named; shown marked with --mixed-identity), `t3rl runs diff` (refused with exit 1), sweep.md and sweep.png
(not ranked, left out), and an hparams search (the trial fails). Points are compared by interval."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs import list_runs, show_run
from launch.run.sweep import IncomparableEval, Point, SweepSummary, point_metric
from launch.run.sweep_compare import marks
from launch.run.sweep_plot import point_scores
from t3rl_core.eval.identity import differences

IDENTITY = {
    "scorer": {"package": "bfcl-eval", "version": "2026.3.23"},
    "data": {"bfcl_test": "a" * 64},
    "selection": {"categories": None, "limit_per_category": None},
    "metric": {"version": 1, "success": "env verdict (accuracy)"},
    "user_simulator": None,
    "env": {"name": "bfcl_multi_turn", "config_sha256": "c" * 64},
}
OTHER_DATA = IDENTITY | {"data": {"bfcl_test": "b" * 64}}
OTHER_SCORER = IDENTITY | {"scorer": {"package": "bfcl-eval", "version": "2025.1.1"}}


def _summary(accuracy: float, identity: dict | None, tasks: int = 100) -> dict:
    summary = {"complete": True, "overall": {"accuracy": accuracy, "tasks": tasks, "episodes": tasks}}
    return summary | ({"identity": identity} if identity is not None else {})


def _run(root: Path, name: str, summary: dict) -> Path:
    path = root / name / "20260101-000000"
    (path / "stages" / "eval").mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"name": name, "stages": {"eval": {"kind": "eval"}}}))
    (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary))
    return path


def _listing(runs: Path, mixed: bool = False) -> str:
    console = Console(record=True, width=300)
    assert list_runs(runs, console, mixed=mixed) == 0
    return console.export_text()


def test_differences_name_the_part_that_differs() -> None:
    assert differences(IDENTITY, IDENTITY) == []
    (found,) = differences(IDENTITY, OTHER_DATA)
    assert found.startswith("data: bfcl_test aaaaaaaaaaaa… vs bbbbbbbbbbbb…")
    assert differences(IDENTITY, OTHER_SCORER) == ["scorer: version 2026.3.23 vs 2025.1.1"]


def test_runs_lists_only_results_of_one_benchmark_unless_asked(tmp_path: Path) -> None:
    _run(tmp_path, "a", _summary(0.41, IDENTITY))
    _run(tmp_path, "b", _summary(0.47, IDENTITY))
    _run(tmp_path, "c", _summary(0.93, OTHER_DATA))
    _run(tmp_path, "old", _summary(0.5, None))  # written before identities were recorded
    text = _listing(tmp_path)
    assert "0.410" in text and "0.470" in text
    assert "0.930" not in text and "0.500" not in text  # what the older summary measured is unknown
    assert "eval not ranked: data: bfcl_test aaaaaaaaaaaa… vs bbbbbbbbbbbb…" in text
    assert "eval not ranked: identity: not recorded in one of the summaries" in text
    assert "2 result(s) measured another benchmark" in text and "--mixed-identity" in text
    mixed = _listing(tmp_path, mixed=True)
    assert "eval 0.930 (n=100) [other benchmark: data: bfcl_test" in mixed


def test_runs_shows_the_verdict_on_the_published_target(tmp_path: Path) -> None:
    verdict = {
        "label": "T3RL stage 1",
        "role": "target",
        "scope": "overall",
        "metric": "accuracy",
        "published": 0.6,
        "status": "not reproduced",
        "measured": 0.41,
        "gap": -0.19,
        "interval": [0.318, 0.508],
    }
    _run(tmp_path, "a", _summary(0.41, IDENTITY) | {"published": {"verdicts": [verdict]}})
    text = _listing(tmp_path)
    assert "published 0.600 (T3RL stage 1 accuracy): not reproduced, 0.410 (-0.190) [0.318, 0.508]" in text


def test_runs_diff_refuses_results_of_different_benchmarks(tmp_path: Path) -> None:
    runner = CliRunner()
    a = _run(tmp_path, "a", _summary(0.41, IDENTITY))
    b = _run(tmp_path, "b", _summary(0.47, OTHER_SCORER))
    c = _run(tmp_path, "c", _summary(0.52, IDENTITY))
    refused = runner.invoke(app, ["runs", "diff", str(a), str(b)], env={"COLUMNS": "250"})
    assert refused.exit_code == 1, refused.output
    assert "refused" in refused.output and "scorer: version 2026.3.23 vs 2025.1.1" in refused.output
    assert "0.470" not in refused.output
    shown = runner.invoke(app, ["runs", "diff", str(a), str(b), "--mixed-identity"], env={"COLUMNS": "250"})
    assert shown.exit_code == 0 and "0.470" in shown.output and "differs" in shown.output
    same = runner.invoke(app, ["runs", "diff", str(a), str(c)], env={"COLUMNS": "250"})
    assert same.exit_code == 0, same.output
    assert "+0.110" in same.output and "refused" not in same.output


def _sweep(tmp_path: Path, points: list[tuple[float, dict]]) -> SweepSummary:
    sweep = SweepSummary(sweep_dir=tmp_path / "sweep", name="sweep-x", metric_name="eval: overall.accuracy")
    for index, (accuracy, identity) in enumerate(points):
        run_dir = _run(tmp_path / "points", f"p{index:02d}", _summary(accuracy, identity))
        # Its own record says it succeeded (`t3rl runs show` takes a point's status from there).
        succeeded = {"status": "succeeded", "fingerprint": "f", "run_id": "r"}
        (run_dir / "state.json").write_text(json.dumps({"version": 1, "stages": {"eval": succeeded}}))
        sweep.add(Point(index, (f"lr={index}",), (f"lr={index}",)))
        sweep.update(index, run_dir=str(run_dir), metric=accuracy, status="succeeded")
    return sweep


def test_sweep_points_are_compared_by_interval_and_only_on_one_benchmark(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, [(0.50, IDENTITY), (0.45, IDENTITY), (0.20, IDENTITY), (0.90, OTHER_DATA)])
    found = marks(sweep)
    assert found[0].startswith("best [")
    assert found[1].startswith("overlaps best [")  # 45/100 and 50/100 cannot be told apart
    assert found[2].startswith("below best [")
    assert found[3].startswith("not ranked, another benchmark: data: bfcl_test")
    markdown = (tmp_path / "sweep" / "sweep.md").read_text()
    assert "| vs best (95 % interval) |" in markdown and "overlaps best [0.356, 0.548]" in markdown
    assert [score.index for score in point_scores(sweep)] == [0, 1, 2]  # sweep.png leaves p03 out
    console = Console(record=True, width=300)
    assert show_run(sweep.sweep_dir, console) == 0  # `t3rl runs show <sweep dir>`
    shown = console.export_text()
    assert "overlaps best [0.356, 0.548]" in shown and "not ranked, another benchmark: data" in shown


def test_a_search_trial_of_another_benchmark_feeds_nothing_to_the_study(tmp_path: Path) -> None:
    sweep = _sweep(tmp_path, [(0.5, IDENTITY), (0.9, OTHER_DATA)])
    objective = SimpleNamespace(stage="eval", metric="overall.accuracy")

    def stages(index: int) -> list:
        summary = (
            tmp_path / "points" / f"p{index:02d}" / "20260101-000000" / "stages" / "eval" / "summary.json"
        )
        moved = sweep.sweep_dir / f"p{index:02d}" / "stages" / "eval"
        moved.mkdir(parents=True, exist_ok=True)
        (moved / "summary.json").write_text(summary.read_text())
        return [SimpleNamespace(kind="eval", name="eval", outputs={"summary": str(moved / "summary.json")})]

    assert point_metric(stages(0), objective) == 0.5
    with pytest.raises(IncomparableEval, match="data: bfcl_test"):
        point_metric(stages(1), objective)
    assert point_metric(stages(1), None) == 0.9  # a plain sweep still reads it (sweep.md marks it)
