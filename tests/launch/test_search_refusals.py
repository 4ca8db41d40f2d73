"""An Optuna search whose trial is refused (this machine cannot run the plan) records the trial as
failed with the reason, never leaves it `running`; a storage URL whose database driver is missing is a
config error before anything is written, not an ImportError traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.no_slime import no_slime_workdir
from tests.support.sweep_watch import bare_sweep_dirs

SEARCH = [
    "run",
    "-m",
    "+experiment=stage1_bfcl",
    "hparams_search=bfcl_lr_kl_reward",
    "hydra.sweeper.n_trials=1",
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # No slime checkout here: every trial's pre-flight refuses to start it.
    return no_slime_workdir(tmp_path / "work", monkeypatch)


def test_a_trial_refused_at_pre_flight_is_recorded_failed_with_the_reason(workdir: Path) -> None:
    with bare_sweep_dirs(workdir / "runs" / "stage1_bfcl") as bare:  # the record comes first
        result = CliRunner().invoke(app, SEARCH)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and bare == []
    (sweep_json,) = (workdir / "runs").rglob("sweep.json")
    (point,) = json.loads(sweep_json.read_text())["points"]
    assert point["status"] == "failed" and "cannot run the plan" in point["error"], point


@pytest.mark.parametrize(
    ("storage", "said"),
    [
        ("postgresql://user@db.example/optuna", "needs the driver 'psycopg'"),
        ("nosuchdb://host/x", "Can't load plugin"),
    ],
)
def test_a_storage_optuna_cannot_open_is_a_config_error_and_writes_nothing(
    workdir: Path, storage: str, said: str
) -> None:
    result = CliRunner().invoke(app, [*SEARCH, f"hydra.sweeper.storage={storage}"])
    assert result.exit_code == 2, result.output
    assert "hydra.sweeper.storage" in result.output and said in result.output
    assert "fix: " in result.output and "Traceback" not in result.output
    assert not (workdir / "runs").exists()
