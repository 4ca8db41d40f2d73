"""Launcher kinds of round nine, each a record that disagreed with itself or with what ran:

- a sweep whose `sweep-<stamp>` dir existed (another sweep of that second) got a `-1` dir while its
  points' tracking names and its sweep.json still said `sweep-<stamp>`: one name, the dir's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.retool_prepare_only import EXPERIMENT

STAMP = "20260101-000000"


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "T3RL_CHECKPOINTS_DIR", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    experiment = tmp_path / "conf" / "experiment" / "rec.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(EXPERIMENT)
    return tmp_path / "conf"


def _invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def test_a_sweep_whose_stamped_dir_existed_names_its_points_by_the_dir_it_got(conf, tmp_path, monkeypatch):
    monkeypatch.setattr("launch.run.sweep_runs.stamp_now", lambda: STAMP)
    taken = tmp_path / "plans" / "rec" / f"sweep-{STAMP}"
    taken.mkdir(parents=True)  # another sweep's, started in the same second
    result = _invoke("plan", "-m", "+experiment=rec", "seed=1,2", "--config-dir", str(conf))
    assert result.exit_code == 0, result.output
    sweep = taken.with_name(f"sweep-{STAMP}-1")
    assert json.loads((sweep / "sweep.json").read_text())["name"] == sweep.name
    for index in (0, 1):
        tracking = yaml.safe_load((sweep / f"p{index:02d}" / "config.yaml").read_text())["tracking"]
        assert (tracking["group"], tracking["run_name"]) == (sweep.name, f"{sweep.name}-p{index:02d}")
    assert list(taken.iterdir()) == []  # the other sweep's dir is not touched
