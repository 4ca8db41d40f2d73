"""Planted secrets never reach the run dir, plan.sh, command.sh, logs, the manifest or wandb's files.

The secrets sit in the environment (as users pass them) and are pulled into the config through an
interpolation (`hardware.env_vars.HF_TOKEN: ${oc.env:HF_TOKEN}`), so every writer sees them.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config.schema import RunConfig
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.plan.tracking import tracked
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_plans import NoteReporter

SECRETS = {
    "HF_TOKEN": "hf_planted_8c1e5a77d2",
    "OPENAI_API_KEY": "sk-planted-0f3b9c2e41",
    "WANDB_API_KEY": "planted0wandb0key0abcdef0123456789abcd",
    "MY_SERVICE_SECRET": "planted-service-5521",
}
INTERPOLATED = (
    "++hardware.env_vars={HF_TOKEN:${oc.env:HF_TOKEN},MY_SERVICE_SECRET:${oc.env:MY_SERVICE_SECRET}}"
)


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("T3RL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "runs"


def _leaks(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {name}" for name, value in SECRETS.items() if value.encode() in data]
    return found


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_plan_passes_secrets_by_reference_only(runs: Path) -> None:
    _invoke("plan", "+experiment=stage1_bfcl", "tracking=wandb", INTERPOLATED)
    (run_dir,) = (runs.parent / "plans").glob("stage1_bfcl/*")
    command = (run_dir / "stages/train/command.sh").read_text()
    assert '"HF_TOKEN": "${HF_TOKEN}"' in command and '"WANDB_API_KEY": "${WANDB_API_KEY}"' in command
    assert "--wandb-key" not in command
    assert _leaks(run_dir) == []


@pytest.mark.slow
def test_a_run_with_wandb_offline_keeps_every_secret_out(runs: Path) -> None:
    # A real run (data preparation only) with the wandb launcher run writing its offline files.
    _invoke(
        "run",
        "+experiment=quickstart",
        "--only",
        "prepare_data",
        "tracking=wandb",
        "tracking.mode=offline",
        INTERPOLATED,
    )
    (run_dir,) = runs.glob("quickstart/*")
    (wandb_file,) = run_dir.glob("wandb/wandb/offline-run-*/run-*.wandb")
    assert b"quickstart" in wandb_file.read_bytes()  # the tracked config is in there
    assert _leaks(run_dir) == []


def test_a_stage_printing_secrets_leaves_them_out_of_its_log_and_the_tracker(
    runs: Path, tmp_path: Path
) -> None:
    from launch.checks.resolve import resolve

    run = resolve(["+experiment=quickstart", "tracking=wandb", "tracking.mode=offline", INTERPOLATED]).run
    run_dir = RunDir.new(runs, "leaky")
    stage = Stage(
        name="leaky",
        kind="prepare_data",
        commands=('echo "token=$HF_TOKEN key=$OPENAI_API_KEY"',),
    )
    config = run.model_dump(mode="json")
    # The config keeps the reference; the job's environment resolves it where it runs (issue 22 §2).
    assert config["hardware"]["env_vars"]["HF_TOKEN"] == "${oc.env:HF_TOKEN}"
    with tracked(RunConfig.model_validate(config), run_dir.path, config, NoteReporter()) as reporter:
        result = run_pipeline(
            Plan(name="leaky", run_dir=run_dir.path, stages=(stage,)),
            run_dir,
            LocalExecutor(out=io.StringIO()),
            reporter=reporter,
        )
    assert result.status == "succeeded"
    assert "token=*** key=***" in (run_dir.stage_dir("leaky") / "log.txt").read_text()
    assert list(run_dir.path.glob("wandb/wandb/offline-run-*/run-*.wandb"))
    assert _leaks(run_dir.path) == []
