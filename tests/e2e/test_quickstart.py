"""The CPU main job, `t3rl run +experiment=quickstart`, end to end in a temporary run directory.

The reference engine's verdicts are not trusted: every trajectory's tool calls are decoded again from
the assistant text (independently of t3rl's parsers), replayed through bfcl-eval's official
`multi_turn_checker` with the official runner's turn-count rule, and must agree with the recorded
success, episode by episode.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.eval.metrics import summarize
from t3rl_core.eval.runner import score_of

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SPLITS = {
    "bfcl_test": 300,
    "bfcl_train": 400,
    "bfcl_train_base": 100,
    "bfcl_val": 100,
    "bfcl_unseen": 400,
    "bfcl_all": 800,
}
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.S)
_checker_names = (f"t3rl_quickstart_{i}" for i in itertools.count())


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("quickstart")
    t3rl = Path(sys.executable).with_name("t3rl")
    command = [
        str(t3rl), "run", "+experiment=quickstart",
        f"paths.runs_dir={root / 'runs'}", f"paths.models_dir={root / 'models'}",
        f"paths.checkpoints_dir={root / 'checkpoints'}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, timeout=850)
    assert done.returncode == 0, (
        f"t3rl run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    (run_dir,) = (root / "runs" / "quickstart").iterdir()
    return run_dir, done.stdout


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_data_splits_are_written(run):
    run_dir, _ = run
    data = run_dir / "stages" / "prepare_data" / "data"
    for split, rows in SPLITS.items():
        assert sum(1 for _ in (data / f"{split}.jsonl").open()) == rows
    manifest = json.loads((data / "manifest.json").read_text())
    assert {name: info["rows"] for name, info in manifest["splits"].items()} == SPLITS


def test_reference_accuracy_is_high_and_matches_the_official_checker(run):
    run_dir, _ = run
    out = run_dir / "stages" / "eval_reference"
    records = _jsonl(out / "trajectories.jsonl")
    assert sorted(r["category"] for r in records) == sorted(CATEGORIES * 5 * 2)  # 5 tasks, 2 repeats
    rows = {
        _row_key(row): row for row in _jsonl(run_dir / "stages" / "prepare_data" / "data" / "bfcl_test.jsonl")
    }
    disagreements = []
    for record in records:
        row = rows[(record["category"], record["index"])]
        official, error = official_verdict(row, decode_turns(record["messages"], len(row["prompt"])))
        if official != record["success"]:
            disagreements.append(
                (record["task_id"], record["success"], official, error, record["outcome"]["failure"])
            )
    assert not disagreements, f"t3rl's verdict differs from bfcl-eval's: {disagreements}"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["accuracy"] == pytest.approx(sum(r["success"] for r in records) / len(records))
    recomputed = summarize([score_of(r) for r in records], summary["pass_k"])
    assert summary["categories"] == recomputed["categories"]
    # Gold actions through the real loop: everything but a rare engine/format corner case must pass.
    assert summary["overall"]["accuracy"] >= 0.9, summary["categories"]


def test_tiny_model_trajectories_have_valid_tito_lengths(run):
    run_dir, _ = run
    records = _jsonl(run_dir / "stages" / "eval_tiny" / "trajectories.jsonl")
    assert sorted(r["category"] for r in records) == sorted(CATEGORIES * 2)  # 1 task each, 2 repeats
    for record in records:
        assert record["status"] in ("completed", "truncated"), record.get("error")
        n = len(record["response_ids"])
        assert n > 0 and len(record["loss_mask"]) == n and len(record["log_probs"]) == n
        assert record["prompt_ids"] and 0 < record["num_model_calls"] <= 2
        assert 0 < sum(record["loss_mask"]) <= 16 * record["num_model_calls"]  # max_new_tokens per call
        for log_prob, mask in zip(record["log_probs"], record["loss_mask"], strict=True):
            assert (log_prob < 0) if mask else (log_prob == 0.0)


@pytest.mark.parametrize("stage", ["eval_reference", "eval_tiny"])
def test_reports_exist(run, stage):
    run_dir, _ = run
    out = run_dir / "stages" / stage
    assert json.loads((out / "summary.json").read_text())["complete"] is True
    assert "| **overall** |" in (out / "report.md").read_text()
    assert (out / "accuracy_by_category.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("stage", ["eval_reference", "eval_tiny"])
def test_reports_show_repeats_failures_and_identity(run, stage):
    run_dir, _ = run
    out = run_dir / "stages" / stage
    summary = json.loads((out / "summary.json").read_text())
    assert summary["repeats"]["count"] == 2 and len(summary["repeats"]["overall"]["accuracy"]["values"]) == 2
    assert summary["identity"]["scorer"]["package"] == "bfcl-eval"
    report = (out / "report.md").read_text()
    for section in ("## Variance across 2 repeats", "## Failures by whose fault", "## Benchmark identity"):
        assert section in report, section
    failed = [r for r in _jsonl(out / "trajectories.jsonl") if not r["success"]]
    assert all(r["attribution"]["party"] == "agent" and r["attribution"]["evidence"] for r in failed)


def test_the_next_experiments_plan_is_printed(run):
    _, stdout = run
    tail = stdout[stdout.index("bfcl_env_tuning") :]
    for stage in ("to_torch_dist", "stage1", "stage1_hf", "stage2", "stage2_hf", "eval"):
        assert re.search(rf"\b{stage}\b", tail), stage


# ------------------------------------------------------------------------------ official verdict


def _row_key(row: dict[str, Any]) -> tuple[str, Any]:
    return row["metadata"]["data_source"], row["metadata"]["index"]


def decode_turns(messages: list[dict[str, Any]], prompt_len: int) -> list[list[list[str]]]:
    """bfcl's decoded shape `[turn][step][call]` from the conversation: a user message opens a turn
    (eval mode sends no other user messages), each assistant message with calls is a step."""
    turns: list[list[list[str]]] = [[]]
    for message in messages[prompt_len:]:
        if message["role"] == "user":
            turns.append([])
        elif message["role"] == "assistant":
            calls = [_bfcl_call(json.loads(block)) for block in TOOL_CALL.findall(message["content"] or "")]
            if calls:
                turns[-1].append(calls)
    return turns


def _bfcl_call(call: dict[str, Any]) -> str:
    arguments = ", ".join(f"{key}={value!r}" for key, value in call.get("arguments", {}).items())
    return f"{call['name']}({arguments})"


def official_verdict(row: dict[str, Any], decoded: list[list[list[str]]]) -> tuple[bool, str | None]:
    """bfcl-eval's runner rule (fewer turns than the ground truth = force-terminated), then its checker."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    task = row["metadata"]["bfcl_task"]
    if len(decoded) != len(task["ground_truth"]):
        return False, "multi_turn:force_terminated"
    name = next(_checker_names)  # bfcl-eval keeps instances in module globals keyed by this name
    entry = {
        "id": task["id"],
        "initial_config": task["initial_config"],
        "involved_classes": task["involved_classes"],
    }
    try:
        result = multi_turn_checker(
            decoded, task["ground_truth"], entry, row["metadata"]["data_source"], name
        )
    finally:
        for key in [key for key in vars(multi_turn_utils) if key.startswith(name)]:
            del vars(multi_turn_utils)[key]
    return result["valid"], result.get("error_type")


# ------------------------------------------------------------------------------ the tutorial's figure

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "quickstart.md"
ROW = re.compile(r"^\d+  ")


def _rows(text: str) -> list[list[str]]:
    """The stage rows of a plan's table as a pipe gets it: #, stage, kind, action, what."""
    return [re.split(r"\s{2,}", line.strip())[:5] for line in text.splitlines() if ROW.match(line)]


def test_the_tutorials_resume_figure_is_what_a_resume_plans(run):
    """docs/tutorials/quickstart.md step 6 shows the table a resume prints after summary.json of
    eval_reference is deleted: every row's stage, kind and action as `t3rl plan --run-dir` (the same
    table, nothing run) prints them now, each 'what' the start of today's."""
    run_dir, _ = run
    figure = TUTORIAL.read_text().partition("$ t3rl run --run-dir runs/quickstart/<ts>\n")[2]
    shown = _rows(figure.partition("```")[0])
    assert [row[1] for row in shown] == ["prepare_data", "prepare_model", "eval_reference", "eval_tiny"]
    summary = run_dir / "stages" / "eval_reference" / "summary.json"
    kept = summary.read_bytes()
    summary.unlink()
    try:
        t3rl = Path(sys.executable).with_name("t3rl")
        done = subprocess.run(
            [str(t3rl), "plan", "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=300
        )
    finally:
        summary.write_bytes(kept)
    assert done.returncode == 0, done.stdout + done.stderr
    planned = _rows(done.stdout)
    assert [row[:4] for row in planned] == [row[:4] for row in shown], done.stdout
    for now, figure_row in zip(planned, shown, strict=True):
        assert now[4].startswith(figure_row[4].rstrip("…").rstrip()), (now, figure_row)
