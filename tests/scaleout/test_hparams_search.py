"""A 6-trial Optuna search through Hydra's sweeper plugin, on CPU, with a stand-in objective.

Each trial is a real t3rl point (resolve + validate + plan + run dir through the dry executor); a
tiny stage script then writes the eval stage's summary.json from the trial's resolved config (a
smooth function of lr, kl_loss_coef and the reward), and the search reads the metric from it.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from launch.run.executors.dry import DryExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir
from launch.run.search import TrialOutcome, run_search
from launch.run.sweep import Point, SweepSummary, read_metric

pytestmark = pytest.mark.slow

# The stand-in for training + eval: best at lr = 1e-6, kl = 0, binary reward.
STAND_IN = """
import json, math, sys, yaml
config = yaml.safe_load(open(sys.argv[1]))
curriculum = config["stages"]["train"]["curriculum"]
lr, kl = curriculum["optimizer"]["lr"], curriculum["algorithm"]["kl_loss_coef"]
bonus = 0.1 if config["reward"]["name"] == "binary" else 0.0
accuracy = 1.0 - (math.log10(lr) + 6) ** 2 / 4 - 2 * kl + bonus
json.dump({"overall": {"accuracy": accuracy, "tasks": 10}}, open(sys.argv[2], "w"))
"""


def test_six_trial_search_reads_each_trials_eval_summary(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "search"

    def run_trial(point: Point) -> TrialOutcome:
        resolved = resolve(list(point.with_tracking(sweep_dir.name)))
        run_dir = RunDir(sweep_dir / f"p{point.index:02d}")
        run_dir.path.mkdir(parents=True)
        context = PlanContext(run_dir.path, tmp_path, "/t3rl", sys.executable, run_dir.id)
        plan = build_plan(resolved.run, context)
        run_dir.write_config(yaml.safe_dump(resolved.config), resolved.overrides)
        assert run_pipeline(plan, run_dir, DryExecutor()).status == "planned"
        summary = Path(plan.stage(resolved.run.objective.stage).outputs["summary"])
        summary.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-c", STAND_IN, str(run_dir.path / "config.yaml"), str(summary)], check=True
        )
        metric = read_metric(json.loads(summary.read_text()), resolved.run.objective.metric)
        return TrialOutcome(str(run_dir.path), "succeeded", metric)

    batches: list[list[int]] = []

    def run_trials(points: Sequence[Point], summary: SweepSummary) -> list[TrialOutcome]:
        batches.append([p.index for p in points])
        assert all(summary.points[p.index].status == "running" for p in points)
        return [run_trial(point) for point in points]

    results = run_search(
        [
            "+experiment=stage1_bfcl",
            "hparams_search=bfcl_lr_kl_reward",
            "hydra.sweeper.n_trials=6",
            "hydra.sweeper.n_jobs=2",
        ],
        sweep_dir=sweep_dir,
        name="search",
        run_trials=run_trials,
        metric_name="overall.accuracy",
    )
    # n_jobs trials at a time: each batch is handed over whole (t3rl runs a batch's points at once).
    assert batches == [[0, 1], [2, 3], [4, 5]]

    points = json.loads((sweep_dir / "sweep.json").read_text())["points"]
    assert [p["index"] for p in points] == list(range(6)) and all(p["status"] == "succeeded" for p in points)
    for p in points:
        params = dict(item.split("=", 1) for item in p["varying"])
        lr = float(params["stages.train.curriculum.optimizer.lr"])
        kl = float(params["stages.train.curriculum.algorithm.kl_loss_coef"])
        assert 1e-7 <= lr <= 1e-5 and 0.0 <= kl <= 0.1 and params["reward"] in ("progress", "binary")
        # The trial ran with exactly the sampled values, and its metric is the stand-in's.
        config = yaml.safe_load((Path(p["run_dir"]) / "config.yaml").read_text())
        assert config["stages"]["train"]["curriculum"]["optimizer"]["lr"] == pytest.approx(lr)
        expected = 1 - (math.log10(lr) + 6) ** 2 / 4 - 2 * kl + (0.1 if params["reward"] == "binary" else 0)
        assert p["metric"] == pytest.approx(expected)
    best = max(points, key=lambda p: p["metric"])
    assert results["best_value"] == pytest.approx(best["metric"])
    assert {f"{k}={v}" for k, v in results["best_params"].items()} == set(best["varying"])
    assert (sweep_dir / "optimization_results.yaml").exists()


def test_a_failed_trial_stops_the_search_with_its_reason(tmp_path: Path) -> None:
    from launch.run.search import TrialFailed

    def run_trials(points: Sequence[Point], summary: SweepSummary) -> list[TrialOutcome]:
        return [TrialOutcome(None, "failed", None, "stage eval: the engine failed") for _ in points]

    with pytest.raises(TrialFailed, match=r"trial 0 \(.*\): stage eval: the engine failed"):
        run_search(
            ["+experiment=stage1_bfcl", "hparams_search=bfcl_lr_kl_reward", "hydra.sweeper.n_trials=1",
             "hydra.sweeper.max_failure_rate=0.0"],
            sweep_dir=tmp_path / "search", name="search", run_trials=run_trials,
        )  # fmt: skip
    (point,) = json.loads((tmp_path / "search" / "sweep.json").read_text())["points"]
    assert (point["status"], point["error"]) == ("failed", "stage eval: the engine failed")
