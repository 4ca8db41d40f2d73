"""`t3rl run -m`: every point is validated before anything runs; each bad point is named with its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app

# 2 hardware configs x 3 tensor-parallel sizes x 2 rewards = 12 points. A global batch of 8 splits
# over every data-parallel size except 16 (2 nodes x 8 GPUs at TP 1): exactly 2 points are invalid.
SWEEP = [
    "+experiment=stage1_bfcl",
    "hardware=h200x8,h200x8x2nodes",
    "hardware.tensor_parallel=1,2,4",
    "hardware.sequence_parallel=false",
    "reward=progress,binary",
]


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_RUNS_DIR", str(tmp_path / "runs"))
    return tmp_path / "runs"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.output


def test_invalid_points_stop_the_whole_sweep_before_anything_runs(runs: Path) -> None:
    # `run` with a real executor (slurm: 2-node points need one Ray head per job, not the local one): had
    # any point started, its run dir would exist.
    code, out = _invoke("run", "-m", *SWEEP, "stages.train.curriculum.global_batch_size=8", "executor=slurm")
    assert code == 2, out
    assert "12 sweep points" in out
    assert "2 of 12 points are invalid" in out and "nothing was submitted" in out
    bad_rows = [line for line in out.splitlines() if "global batch 8 does not split over 16" in line]
    assert len(bad_rows) == 2, out
    assert out.count("global_batch_size=16 (a multiple of 16 dividing 512 samples)") == 2
    assert not runs.exists() or not any(runs.rglob("state.json"))
    assert not runs.exists() or not any(runs.rglob("sweep.json"))


@pytest.mark.slow
def test_fixed_sweep_plans_all_twelve_points_in_one_call(runs: Path) -> None:
    code, out = _invoke(
        "plan", "-m", *SWEEP, "stages.train.curriculum.global_batch_size=16", "executor=slurm"
    )
    assert code == 0, out
    assert not runs.exists(), "planned points are plans, not runs"
    (sweep_json,) = (runs.parent / "plans").rglob("sweep.json")
    summary = json.loads(sweep_json.read_text())
    assert [p["status"] for p in summary["points"]] == ["planned"] * 12
    run_dirs = [Path(p["run_dir"]) for p in summary["points"]]
    assert len(set(run_dirs)) == 12 and all((d / "plan.sh").exists() for d in run_dirs)
    # Point 6 is 2 nodes at TP 1: its train stage asks slime for both nodes.
    assert summary["points"][6]["varying"] == [
        "hardware=h200x8x2nodes",
        "hardware.tensor_parallel=1",
        "reward=progress",
    ]
    plan_sh = (run_dirs[6] / "plan.sh").read_text()
    assert "--actor-num-nodes 2" in plan_sh and "--actor-num-gpus-per-node 8" in plan_sh
    # Each point is tracked in the sweep's group under its own name.
    config = yaml.safe_load((run_dirs[3] / "config.yaml").read_text())
    assert config["tracking"]["group"] == summary["name"]
    assert config["tracking"]["run_name"] == f"{summary['name']}-p03"
    assert (
        "| 11 | hardware=h200x8x2nodes hardware.tensor_parallel=4 reward=binary |"
        in (sweep_json.parent / "sweep.md").read_text()
    )


def test_point_metric_reads_the_objective_or_the_last_eval_accuracy(tmp_path: Path) -> None:
    from launch.config.schema import ObjectiveConfig
    from launch.plan.stages import Stage
    from launch.run.sweep import IncompleteEval, point_metric

    def eval_stage(name: str, accuracy: float | None) -> Stage:
        summary = tmp_path / f"{name}.json"
        if accuracy is not None:
            overall = {"accuracy": accuracy, "reward": accuracy / 2}
            summary.write_text(json.dumps({"complete": True, "overall": overall}))
        return Stage(name=name, kind="eval", commands=(), outputs={"summary": str(summary)})

    stages = [
        Stage(name="train", kind="train", commands=()),
        eval_stage("val", 0.25),
        eval_stage("test", 0.75),
    ]
    assert point_metric(stages) == 0.75
    assert point_metric(stages, ObjectiveConfig(stage="val", metric="overall.reward")) == 0.125
    assert point_metric([*stages[:2], eval_stage("never_ran", None)]) is None
    with pytest.raises(KeyError, match="no 'pass_at_1'"):
        point_metric(stages, ObjectiveConfig(metric="overall.pass_at_1"))
    # An incomplete eval's numbers are never read: the point (trial) fails, naming the reason.
    broken = eval_stage("broken", 0.9)
    path = Path(broken.outputs["summary"])
    path.write_text(json.dumps({**json.loads(path.read_text()), "complete": False, "reason": "engine died"}))
    with pytest.raises(IncompleteEval, match="engine died"):
        point_metric([*stages, broken])
    path.write_text(json.dumps({"overall": {"accuracy": 0.9}}))  # no `complete` at all: not trusted
    with pytest.raises(IncompleteEval):
        point_metric([*stages, broken])
