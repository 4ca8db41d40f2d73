"""`t3rl runs` and `t3rl runs diff` on real eval summaries that measured different things: the refusal
names the part that differs, the two runs and what to rerun; an older summary without the new parts is
named as such. Each failed before the identity recorded budget, decoding and coverage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs import list_runs
from tests.eval.test_comparable_kinds import evaluate

RUNNER = CliRunner()


def _run(root: Path, name: str, summary: dict[str, Any]) -> Path:
    path = root / name / "20260101-000000"
    (path / "stages" / "eval").mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"name": name, "stages": {"eval": {"kind": "eval"}}}))
    (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary))
    return path


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("base"))


def _diff(a: Path, b: Path) -> Any:
    return RUNNER.invoke(app, ["runs", "diff", str(a), str(b)], env={"COLUMNS": "400"})


def test_runs_diff_names_the_budget_the_runs_and_the_rerun(base: dict, tmp_path: Path) -> None:
    a = _run(tmp_path, "long", base)
    b = _run(tmp_path, "short", evaluate(tmp_path / "short_eval", max_new_tokens=2048))
    refused = _diff(a, b)
    text = " ".join(refused.output.split())
    assert refused.exit_code == 1, refused.output
    assert "budget: max_new_tokens 32768 vs 2048" in text
    assert str(a) in text and str(b) in text
    assert "rerun one with the other's eval.max_new_tokens" in text


def test_runs_diff_refuses_a_greedy_against_a_sampled_eval(base: dict, tmp_path: Path) -> None:
    a = _run(tmp_path, "greedy", base)
    b = _run(tmp_path, "sampled", evaluate(tmp_path / "sampled_eval", temperature=0.7))
    refused = _diff(a, b)
    assert refused.exit_code == 1 and "decoding: temperature 0.0 vs 0.7" in " ".join(refused.output.split())


def test_runs_lists_an_eval_that_left_tasks_unscored_apart(
    base: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.eval.test_comparable_kinds import ReferenceEngine, abort_third_call

    abort_third_call(monkeypatch, ReferenceEngine)
    partial = evaluate(tmp_path / "partial_eval", max_engine_failure_rate=0.5)
    runs = tmp_path / "runs"
    for name in ("one", "two"):
        _run(runs, name, base)
    _run(runs, "partial", partial)
    console = Console(record=True, width=400)
    assert list_runs(runs, console, mixed=False) == 0
    text = console.export_text()
    assert "eval not ranked: coverage: unscored 0 vs 1" in text
    refused = _diff(runs / "one" / "20260101-000000", runs / "partial" / "20260101-000000")
    assert refused.exit_code == 1 and "--resume" in refused.output


def test_a_summary_older_than_a_part_is_named_so(base: dict, tmp_path: Path) -> None:
    older = base | {"identity": {k: v for k, v in base["identity"].items() if k != "coverage"}}
    refused = _diff(_run(tmp_path, "new", base), _run(tmp_path, "old", older))
    text = " ".join(refused.output.split())
    assert refused.exit_code == 1
    assert "coverage: not recorded in one of the summaries (written before t3rl recorded it)" in text
