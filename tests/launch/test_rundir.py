"""Run directory: atomic writes, clear errors on damaged files, nothing deleted when superseding."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from launch.run.rundir import (
    RunDir,
    RunDirError,
    RunState,
    StageRecord,
    git_state,
    package_versions,
)
from t3rl_core.atomic_files import atomic_write_text

REPO = Path(__file__).resolve().parents[2]


def test_a_failed_write_leaves_the_old_file_whole_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    atomic_write_text(target, '{"old": true}', durable=True)

    def crash(src, dst):
        raise OSError("disk gone mid-write")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(target, '{"new": tr', durable=True)
    assert json.loads(target.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_state_round_trips_and_records_go_to_status_json(tmp_path):
    run_dir = RunDir(tmp_path)
    state = RunState()
    record = StageRecord("running", "fp", "id1", {"a": "id0"}, attempts=1, handle={"pgid": 5})
    run_dir.record(state, "b", record)
    loaded = run_dir.load_state()
    assert loaded.stages["b"] == record
    status = json.loads((tmp_path / "stages" / "b" / "status.json").read_text())
    assert status["stage"] == "b" and status["status"] == "running" and status["upstream"] == {"a": "id0"}


def test_no_state_file_is_an_empty_state_but_a_damaged_one_is_an_error(tmp_path):
    run_dir = RunDir(tmp_path)
    assert run_dir.load_state().stages == {}
    (tmp_path / "state.json").write_text('{"version": 1, "stages": {"a": {"status": "succ')
    with pytest.raises(RunDirError) as err:
        run_dir.load_state()
    assert str(tmp_path / "state.json") in str(err.value) and "corrupt" in str(err.value)
    (tmp_path / "state.json").write_text('{"version": 1, "stages": {"a": {"status": "succeeded"}}}')
    with pytest.raises(RunDirError, match="record of stage 'a' is malformed"):
        run_dir.load_state()


def test_superseding_moves_the_stage_dir_and_keeps_the_config_it_read(tmp_path):
    run_dir = RunDir(tmp_path)
    (tmp_path / "stages" / "train").mkdir(parents=True)
    (tmp_path / "stages" / "train" / "ckpt").write_text("weights")
    runtime = tmp_path / "runtime" / "train.yaml"
    runtime.parent.mkdir()
    runtime.write_text("t3rl: old")
    first = run_dir.supersede("train", [str(runtime)])
    assert first == tmp_path / "superseded" / "train.1"
    assert (first / "ckpt").read_text() == "weights" and (
        first / "runtime" / "train.yaml"
    ).read_text() == "t3rl: old"
    (tmp_path / "stages" / "train").mkdir()
    assert run_dir.supersede("train") == tmp_path / "superseded" / "train.2"
    assert run_dir.supersede("never_ran") is None


def test_a_changed_config_keeps_the_previous_one(tmp_path):
    run_dir = RunDir(tmp_path)
    run_dir.write_config("a: 1\n", ["x=1"])
    run_dir.write_config("a: 1\n", ["x=1"])
    assert not (tmp_path / "superseded").exists()
    run_dir.write_config("a: 2\n", ["x=2"])
    assert (tmp_path / "superseded" / "config.1.yaml").read_text() == "a: 1\n"
    assert run_dir.read_overrides() == ["x=2"]


def test_new_run_dirs_never_collide(tmp_path):
    first = RunDir.new(tmp_path, "exp", stamp="20260101-000000")
    second = RunDir.new(tmp_path, "exp", stamp="20260101-000000")
    assert first.path.name == "20260101-000000" and second.path.name == "20260101-000000-1"
    assert first.id == "exp-20260101-000000"


def test_manifest_facts_come_from_the_install_and_the_checkout():
    versions = package_versions()
    assert versions["t3rl"] and versions["hydra-core"] == "1.3.8" and versions["pydantic"]
    git = git_state(REPO)
    assert git["sha"] is None or len(git["sha"]) == 40
    assert git_state(Path("/")) == {"sha": None, "dirty": None}
