"""Comparable results, hunt wave four (docs/explanation/comparable-results.md, "Hunt wave four").

Each kind was tried on run dirs as t3rl writes them (config.yaml, state.json, a stage's summary.json)
put side by side with `t3rl runs diff` or listed with `t3rl runs`; each test fails with its declaration
turned off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.eval_command import _check_out, _check_resumed_as_recorded
from launch.cli.results_compare import compare_results
from launch.cli.runs import why_no_result
from t3rl_core.eval.config import EvalConfig

WHEN = "20260101-000000"
SUMMARY = {"overall": {"accuracy": 1.0, "n": 4}, "complete": True}


def _run(root: Path, name: str, record: dict[str, Any] | None, *, summary: bool = False) -> Path:
    """A pipeline run dir with one eval stage `eval`, its state.json record `record` (None: no state
    file), and its summary.json when `summary`."""
    path = root / name / WHEN
    (path / "stages" / "eval").mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"name": name, "stages": {"eval": {"kind": "eval"}}}))
    if record is not None:
        (path / "state.json").write_text(json.dumps({"stages": {"eval": record}}))
    if summary:
        (path / "stages" / "eval" / "summary.json").write_text(json.dumps(SUMMARY))
    return path


def _diff_text(a: Path, b: Path) -> str:
    console = Console(record=True, width=400)
    compare_results(a, b, console, mixed=False, why_missing=why_no_result)
    return " ".join(console.export_text().split())


# ------------------------------------------------ `runs diff` of a run whose eval stage has no result


def _failed(message: str) -> dict[str, Any]:
    return {"status": "failed", "fingerprint": "f", "run_id": "r", "returncode": 1, "message": message}


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (
            _failed("engine died: CUDA out of memory"),
            "A's stage eval failed: engine died: CUDA out of memory",
        ),
        (None, "A's stage eval never ran (planned"),
        ({"status": "stopped", "fingerprint": "f", "run_id": "r"}, "A's stage eval stopped, before it wrote"),
        (
            {"status": "succeeded", "fingerprint": "f", "run_id": "r"},
            "A's stage eval succeeded, but wrote no",
        ),
    ],
    ids=["failed", "never ran", "stopped", "summary gone"],
)
def test_runs_diff_says_why_one_side_has_no_eval(tmp_path: Path, record: dict | None, says: str) -> None:
    """`t3rl runs diff A B` where A's eval stage failed (or never ran, was stopped, lost its summary).
    Was: `eval: only B has this eval stage's result`, nothing of why nor what gives one. Now the side
    without a result is read as `t3rl runs` reads it (`runs.why_no_result`): its status, the
    stage's message, and the resume that runs it."""
    a, b = _run(tmp_path, "a", record), _run(tmp_path, "b", None, summary=True)
    text = _diff_text(a, b)
    assert f"eval: only B has this eval stage's result ({says}" in text, text
    assert f"`t3rl run --run-dir {a}` runs it" in text, text


def _eval_record(root: Path, name: str, episodes: int) -> Path:
    """A `t3rl eval --out` record killed outright after `episodes` finished episodes: no summary.json."""
    path = root / name
    path.mkdir()
    (path / "manifest.json").write_text(
        json.dumps({"record": "eval", "overrides": ["+experiment=quickstart"]})
    )
    (path / "config.yaml").write_text(yaml.safe_dump({"name": "quickstart", "eval": {}}))
    (path / "trajectories.jsonl").write_text("".join(json.dumps({"task": i}) + "\n" for i in range(episodes)))
    return path


def test_runs_diff_of_an_eval_record_killed_names_its_own_resume(tmp_path: Path) -> None:
    """An eval record's missing result is resumed with `t3rl eval --resume --out`, not `t3rl run`, which
    refuses an eval record."""
    a, b = _eval_record(tmp_path, "killed", 3), _run(tmp_path, "b", None, summary=True)
    text = _diff_text(a, b)
    assert "(A's stage eval interrupted, before it wrote a summary; `t3rl eval --resume --out" in text, text


# ------------------------------------------------ the same `t3rl eval --out DIR` again after a SIGKILL


def test_an_eval_killed_outright_is_not_written_over_without_resume(tmp_path: Path) -> None:
    """`t3rl eval … --out DIR` SIGKILLed (the OOM killer, a preempted node: no resume line is printed),
    then the same command again. Was: a new attempt 1 over the record, its finished episodes dropped
    without a word. Now refused (exit 2) with the resume line; with --resume it goes on, and over a
    finished eval's record (its summary there) an eval writes as before (no over-refusal)."""
    out = _eval_record(tmp_path, "out", 9)
    argv = ["eval", "+experiment=quickstart", "--stage", "eval_reference", "--out", str(out)]
    refused = CliRunner().invoke(app, argv, env={"COLUMNS": "400"})
    # the error's panel wraps a long --out (a deep TMPDIR) onto its next line, between the box's sides
    text = " ".join(refused.output.replace("│", " ").split())
    assert refused.exit_code == 2, refused.output
    assert "holds 9 finished episodes of an eval that ended before its summary" in text, text
    assert f"--stage eval_reference --out {out} --resume" in text, text
    _check_out(out, True)  # --resume: no refusal
    (out / "summary.json").write_text(json.dumps(SUMMARY))
    _check_out(out, False)  # a finished eval's record: written over, as before


# ------------------------------------------------ `--resume` with another selection or measurement


def test_a_resume_of_another_eval_is_refused_before_it_drops_episodes(tmp_path: Path) -> None:
    """`t3rl eval … --out DIR --resume --limit-per-category 2` on a finished eval of 5 per category. Was:
    the record rewritten as an 8-task eval, its 24 other finished episodes deleted, exit 0. Now refused
    naming the setting that differs; the same eval, or one differing only where no result depends
    (concurrency, the server), resumes as before."""
    recorded = EvalConfig(limit_per_category=5)
    out = _eval_record(tmp_path, "out", 40)
    (out / "config.yaml").write_text(yaml.safe_dump({"eval": recorded.model_dump(mode="json")}))
    with pytest.raises(typer.BadParameter) as refused:
        _check_resumed_as_recorded(out, EvalConfig(limit_per_category=2))
    assert "eval.limit_per_category (5 there, 2 here)" in str(refused.value), refused.value
    with pytest.raises(typer.BadParameter, match=r"eval\.max_new_tokens \(None there, 64 here\)"):
        _check_resumed_as_recorded(out, EvalConfig(limit_per_category=5, max_new_tokens=64))
    _check_resumed_as_recorded(out, EvalConfig(limit_per_category=5))
    _check_resumed_as_recorded(out, EvalConfig(limit_per_category=5, concurrency=4))


def test_runs_show_of_an_eval_killed_outright_gives_its_resume(tmp_path: Path) -> None:
    """`t3rl runs show DIR` of a `t3rl eval` record killed before its summary. Was: the stage
    `interrupted` and `logs: DIR/stages/<stage>/log.txt`, a file an eval record never has, with no word
    of how to go on (the kill printed none). Now its records and the resume line from its manifest."""
    out = _eval_record(tmp_path, "killed", 3)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"eval": {"stage": "eval_reference"}}))
    shown = CliRunner().invoke(app, ["runs", "show", str(out)], env={"COLUMNS": "400"})
    text = " ".join(shown.output.split())
    assert shown.exit_code == 0 and "stages/<stage>/log.txt" not in text, text
    line = f"t3rl eval +experiment=quickstart --stage eval_reference --out {out} --resume"
    assert f"resume it with: {line}" in text, text
