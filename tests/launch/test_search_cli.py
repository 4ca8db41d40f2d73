"""An Optuna search with `n_jobs: 2` through the real CLI (`python -m launch run -m …`): both trials of
the batch run at once (their recorded start/end times overlap), each is scored from its own eval, and
the study's summary (printed, sweep.json, sweep.md) lists every trial with its state and metric.

The target is CPU-cheap: BFCL's base category, the scripted reference policy on two tasks, and the
search varies its injected fault rate (0 → every task passes, 1 → a wrong argument on every call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from t3rl_core.chat import tiny

pytestmark = pytest.mark.slow

EXPERIMENT = """\
# @package _global_
# BFCL base-category data and the reference policy on two tasks: a search target that runs in seconds.
defaults:
  - override /model: tiny_qwen3
  - override /env: bfcl_multi_turn
  - override /reward: progress
  - override /executor: local
  - override /tracking: none
  - _self_
name: search_tiny
env:
  data:
    categories: [multi_turn_base]
stages:
  prepare_data:
    kind: prepare_data
  eval:
    kind: eval
    checkpoint: null
    eval:
      engine:
        name: reference
        faults: {wrong_argument: 0.0}
      split: bfcl_test
      limit_per_category: 2
      concurrency: 2
      max_new_tokens: 32768
"""

SEARCH = """\
# @package _global_
# Two trials at once over the reference policy's fault rate.
defaults:
  - override /hydra/sweeper: optuna
objective:
  stage: eval
  metric: overall.accuracy
hydra:
  sweeper:
    direction: maximize
    study_name: tiny_faults
    storage: null
    n_trials: 2
    n_jobs: 2
    max_failure_rate: 0.0
    sampler:
      _target_: optuna.samplers.TPESampler
      seed: 0  # its first two random draws: 1.0, then 0.0
      n_startup_trials: 2
    params:
      stages.eval.eval.engine.faults.wrong_argument: choice(0.0, 1.0)
"""


def test_two_trials_of_a_batch_run_at_once_and_the_study_lists_both(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    (conf / "experiment").mkdir(parents=True)
    (conf / "hparams_search").mkdir()
    (conf / "experiment" / "search_tiny.yaml").write_text(EXPERIMENT)
    (conf / "hparams_search" / "tiny_faults.yaml").write_text(SEARCH)
    tokenizer = tiny.shared_tokenizer_dir("qwen3")  # the tokenizer the reference policy renders with
    env = {k: v for k, v in os.environ.items() if k not in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR")}
    env["T3RL_CACHE_DIR"] = str(tmp_path / "cache")
    env["COLUMNS"] = "200"  # one table row per trial
    done = subprocess.run(
        [sys.executable, "-m", "launch", "run", "-m", "+experiment=search_tiny", "hparams_search=tiny_faults",
         "model.synthetic=false", f"model.hf_checkpoint={tokenizer}", "--config-dir", str(conf)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sweep_dir,) = (tmp_path / "runs" / "search_tiny").glob("sweep-*")
    points = json.loads((sweep_dir / "sweep.json").read_text())["points"]

    # Each trial: the sampled value only, its own run, scored from its own eval.
    assert [p["varying"] for p in points] == [
        ["stages.eval.eval.engine.faults.wrong_argument=1.0"],
        ["stages.eval.eval.engine.faults.wrong_argument=0.0"],
    ]
    assert [(p["status"], p["metric"]) for p in points] == [("succeeded", 0.0), ("succeeded", 1.0)]
    for point in points:
        summary = json.loads((Path(point["run_dir"]) / "stages" / "eval" / "summary.json").read_text())
        assert summary["overall"]["accuracy"] == point["metric"] and summary["complete"] is True

    # At once: each trial started before the other ended (launcher records, ISO seconds).
    first, second = points
    assert max(first["started_at"], second["started_at"]) < min(first["finished_at"], second["finished_at"])

    # The study's summary: printed, and in sweep.md, every trial with its state and metric.
    lines = done.stdout.splitlines()
    study = lines[next(i for i, line in enumerate(lines) if "2 trial(s)" in line) :]
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in study if line.startswith("│")]
    assert [row[:4] for row in rows] == [
        ["0", "stages.eval.eval.engine.faults.wrong_argument=1.0", "succeeded", "0"],
        ["1", "stages.eval.eval.engine.faults.wrong_argument=0.0", "succeeded", "1"],
    ]
    assert "search done" in done.stdout and "= 1.0" in done.stdout
    markdown = (sweep_dir / "sweep.md").read_text()
    assert "| 0 | stages.eval.eval.engine.faults.wrong_argument=1.0 | p00 | succeeded |" in markdown
    assert "| 1 | stages.eval.eval.engine.faults.wrong_argument=0.0 | p01 | succeeded |" in markdown
