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
import yaml
from rich.console import Console

from launch.cli.results_compare import compare_results

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
    compare_results(a, b, console, mixed=False)
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
    without a result is read as `t3rl runs` reads it (`results_compare.why_no_result`): its status, the
    stage's message, and the resume that runs it."""
    a, b = _run(tmp_path, "a", record), _run(tmp_path, "b", None, summary=True)
    text = _diff_text(a, b)
    assert f"eval: only B has this eval stage's result ({says}" in text, text
    assert f"`t3rl run --run-dir {a}` runs it" in text, text
