"""`t3rl plan` / `t3rl run` end to end through the CLI: run dirs, exit codes, sweeps, light imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.sandbox.protections import LAYERS
from tests.support.no_slime import cli_workdir

HEAVY = ("torch", "transformers", "ray", "sglang", "wandb", "bfcl_eval")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    return cli_workdir(tmp_path, monkeypatch)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def only_run_dir(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir()]
    return run_dir


def test_plan_writes_a_complete_plan_dir_apart_from_runs_and_runs_nothing(workdir):
    result = invoke("plan", "+experiment=stage1_bfcl")
    assert result.exit_code == 0, result.output
    assert not (workdir / "runs").exists(), "a plan is not a run: `t3rl runs` must not list it"
    run_dir = only_run_dir(workdir / "plans" / "stage1_bfcl")
    for name in ("config.yaml", "overrides.yaml", "manifest.json", "plan.sh"):
        assert (run_dir / name).exists(), name
    assert yaml.safe_load((run_dir / "overrides.yaml").read_text()) == ["+experiment=stage1_bfcl"]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["git"]["sha"] and manifest["packages"]["hydra-core"]
    assert manifest["record"] == "plan" and manifest["attempt"] is None
    assert not (run_dir / "overrides.history.yaml").exists()
    # Where the launcher ran and what the config asks of the cluster are two separate records.
    planned = manifest["planned_topology"]
    assert planned["stages"]["train"]["tp"] == 2 and planned["stages"]["train"]["gpus"] == 8
    assert planned["executor"] == "local" and planned["hardware"]["gpus_per_node"] == 8
    assert manifest["launcher"]["hostname"] and "host" not in manifest and "topology" not in manifest
    assert manifest["seeds"]["run"] == 42
    for stage in ("data", "to_torch_dist", "train", "to_hf", "eval"):
        assert (run_dir / "stages" / stage / "command.sh").exists()
    assert (run_dir / "runtime" / "train.yaml").exists()
    assert not (run_dir / "state.json").exists()
    plan_sh = (run_dir / "plan.sh").read_text()
    assert subprocess.run(["bash", "-n", str(run_dir / "plan.sh")]).returncode == 0
    train_cmd = (run_dir / "stages" / "train" / "command.sh").read_text()
    assert "ray job submit" in train_cmd and "ray job submit" in plan_sh
    assert "ray start --head" in plan_sh and "ray start" not in train_cmd
    assert "run it:  t3rl run +experiment=stage1_bfcl" in result.output


def test_plan_with_a_bad_config_exits_2_and_writes_nothing(workdir):
    result = CliRunner().invoke(app, ["plan", "+experiment=stage1_bfcl", "hardware.tensor_parallel=3"])
    assert result.exit_code == 2
    assert "hardware.tensor_parallel" in result.output
    assert not (workdir / "runs").exists() or not any((workdir / "runs").rglob("*.yaml"))


def test_plan_error_from_the_planner_names_the_file_that_set_the_key(workdir):
    result = CliRunner().invoke(
        app, ["plan", "+experiment=stage1_bfcl", "stages.train.curriculum.save_interval=null"]
    )
    assert result.exit_code == 2, result.output
    assert "save_interval" in result.output
    assert (
        not any((workdir / "runs" / "stage1_bfcl").iterdir())
        if (workdir / "runs" / "stage1_bfcl").exists()
        else True
    )


def test_multirun_plans_every_point_in_its_own_run_dir(workdir):
    result = invoke("plan", "-m", "+experiment=stage1_bfcl", "reward=progress,binary")
    assert result.exit_code == 0, result.output
    assert not (workdir / "runs").exists()
    (sweep,) = (workdir / "plans" / "stage1_bfcl").iterdir()
    points = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert points == ["p00", "p01"]
    rewards = [yaml.safe_load((sweep / p / "config.yaml").read_text())["reward"]["name"] for p in points]
    assert rewards == ["progress", "binary"]
    summary = json.loads((sweep / "sweep.json").read_text())
    assert [p["status"] for p in summary["points"]] == ["planned", "planned"]
    overrides = yaml.safe_load((sweep / "p01" / "overrides.yaml").read_text())
    assert "reward=binary" in overrides and any(o.startswith("tracking.group=") for o in overrides)


def test_multirun_with_one_bad_point_starts_none(workdir):
    result = CliRunner().invoke(
        app, ["plan", "-m", "+experiment=stage1_bfcl", "hardware.tensor_parallel=2,3"]
    )
    assert result.exit_code == 2, result.output
    assert "1 of 2 points are invalid" in result.output
    runs = workdir / "runs"
    assert not runs.exists() or not any(runs.rglob("config.yaml"))


def test_plan_imports_no_heavy_library(workdir):
    """Neither when it composes the config (directly, without Hydra) nor on a composition cache hit."""
    code = (
        "import json, sys\n"
        "from launch.cli.app import app\n"
        "try:\n"
        "    app(['plan', '+experiment=stage2_bfcl'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "T3RL_NO_CACHE"}
    env["T3RL_CACHE_DIR"] = str(workdir / "cache")
    loaded = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=workdir, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        loaded.append(set(json.loads(done.stdout.strip().splitlines()[-1])))
    miss, hit = loaded
    assert not miss & {"hydra", "omegaconf", "antlr4", *HEAVY}
    assert not hit & {"hydra", "omegaconf", "antlr4", *HEAVY}


EXPERIMENT = """\
# @package _global_
# A one-stage CPU pipeline for the CLI test: BFCL data preparation only.
defaults:
  - override /executor: local
  - override /tracking: none
  - _self_
name: cli_data_only
env:
  data:
    categories: [multi_turn_base]  # a quarter of the rows: what these tests check is not the data's size
stages:
  prepare_data:
    kind: prepare_data
"""


@pytest.mark.slow
def test_run_executes_then_resumes_from_the_run_dir(workdir):
    conf = workdir / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "cli_data_only.yaml").write_text(EXPERIMENT)
    args = ["run", "+experiment=cli_data_only", "--config-dir", str(workdir / "myconf")]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    run_dir = only_run_dir(workdir / "runs" / "cli_data_only")
    data = run_dir / "stages" / "prepare_data" / "data"
    assert (data / "bfcl_test.jsonl").exists()
    state = json.loads((run_dir / "state.json").read_text())
    assert state["stages"]["prepare_data"]["status"] == "succeeded"

    again = invoke("run", "--run-dir", str(run_dir))
    assert again.exit_code == 0, again.output
    assert "cached" in again.output
    assert json.loads((run_dir / "state.json").read_text()) == state

    forced = invoke("run", "--run-dir", str(run_dir), "--only", "prepare_data")
    assert forced.exit_code == 0, forced.output
    record = json.loads((run_dir / "state.json").read_text())["stages"]["prepare_data"]
    assert record["run_id"] != state["stages"]["prepare_data"]["run_id"]
    assert (run_dir / "superseded" / "prepare_data.1" / "command.sh").exists()


def test_run_reports_a_failing_stage_with_exit_1_and_how_to_resume(workdir, monkeypatch):
    conf = workdir / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "cli_data_only.yaml").write_text(EXPERIMENT)
    # A python that fails stands in for a broken environment; the stage must fail cleanly. (A cache of
    # its own: data prepared by another test would be linked without running python at all.)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(workdir / "cache"))
    fake = workdir / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text("#!/usr/bin/env bash\necho 'no such module' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    result = invoke("run", "+experiment=cli_data_only", "--config-dir", str(workdir / "myconf"))
    assert result.exit_code == 1, result.output
    assert "stage prepare_data failed" in result.output and "resume with: t3rl run --run-dir" in result.output
    run_dir = only_run_dir(workdir / "runs" / "cli_data_only")
    assert "no such module" in (run_dir / "stages" / "prepare_data" / "log.txt").read_text()
    assert os.access(run_dir / "stages" / "prepare_data" / "command.sh", os.X_OK)


@pytest.mark.slow
def test_multirun_executes_every_point_and_summarises_the_sweep(workdir):
    conf = workdir / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "cli_data_only.yaml").write_text(EXPERIMENT)
    result = invoke(
        "run", "-m", "+experiment=cli_data_only", "env.data.seed=1,2", "--config-dir", str(workdir / "myconf")
    )
    assert result.exit_code == 0, result.output
    (sweep,) = (workdir / "runs" / "cli_data_only").iterdir()
    summary = json.loads((sweep / "sweep.json").read_text())
    assert [(p["varying"], p["status"]) for p in summary["points"]] == [
        (["env.data.seed=1"], "succeeded"),
        (["env.data.seed=2"], "succeeded"),
    ]
    first, second = (
        (sweep / "p00" / "stages" / "prepare_data" / "data"),
        (sweep / "p01" / "stages" / "prepare_data" / "data"),
    )
    assert (first / "bfcl_test.jsonl").read_text() != (
        second / "bfcl_test.jsonl"
    ).read_text()  # other id split


def test_plan_records_the_local_sandbox_protections_in_the_manifest(workdir):
    result = invoke("plan", "+experiment=retool")
    assert result.exit_code == 0, result.output
    manifest = json.loads((only_run_dir(workdir / "plans" / "retool") / "manifest.json").read_text())
    sandbox = manifest["sandbox"]
    assert set(sandbox) == {"probed_on", "active", "missing"}
    # Every layer the sandbox declares is recorded, as active or as missing (with what is lost).
    assert sorted([*sandbox["active"], *sandbox["missing"]]) == sorted(LAYERS)
    assert "cpu" in LAYERS
    # One line says which memory cap this host gives the cells (t3rl_core.sandbox.local.memory_cap).
    assert "local sandbox memory cap: " in result.output


def test_a_required_sandbox_layer_the_host_lacks_is_named_in_the_manifest(workdir):
    overrides = ["env.sandbox.isolation=none", "env.sandbox.require=[seccomp]"]
    result = invoke("plan", "+experiment=retool", *overrides)
    assert result.exit_code == 0, result.output
    manifest = json.loads((only_run_dir(workdir / "plans" / "retool") / "manifest.json").read_text())
    assert "sandbox.require lists seccomp" in manifest["sandbox"]["error"]
