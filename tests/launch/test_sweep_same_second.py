"""A sweep's dir is named by the second it started (`sweep-<stamp>`): two sweeps a script starts in the
same second pick the same name while each is checked. The one that writes its record second is refused
with nothing written, instead of writing its points over the other's record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.run.record_files import RunDirError
from launch.run.sweep import Point, SweepSummary


def _first(sweep_dir: Path) -> SweepSummary:
    summary = SweepSummary(sweep_dir=sweep_dir, name=sweep_dir.name, metric_name=None)
    summary.add(Point(0, ("seed=1",), ("seed=1",)))
    return summary


def test_the_second_sweep_into_one_dir_is_refused_and_the_first_record_stays(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "runs" / "x" / "sweep-20260101-000000"
    first = _first(sweep_dir)
    before = (sweep_dir / "sweep.json").read_text()
    other = SweepSummary(sweep_dir=sweep_dir, name=sweep_dir.name, metric_name=None)
    other.launcher = {"host": first.launcher["host"], "pid": first.launcher["pid"] + 1}
    with pytest.raises(RunDirError, match=r"taken meanwhile by another sweep.*start it again"):
        other.add(Point(0, ("seed=7",), ("seed=7",)))
    assert (sweep_dir / "sweep.json").read_text() == before
    first.update(0, status="succeeded")  # the first one goes on writing its own
    assert json.loads((sweep_dir / "sweep.json").read_text())["points"][0]["status"] == "succeeded"


def test_a_resume_and_a_second_view_in_the_launcher_write_the_record(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep-20260101-000000"
    _first(sweep_dir)
    record = json.loads((sweep_dir / "sweep.json").read_text())
    record["launcher"] = {"host": "elsewhere", "pid": 1}  # the launcher that died
    (sweep_dir / "sweep.json").write_text(json.dumps(record))
    resumed = SweepSummary.load(sweep_dir)
    resumed.update(0, status="succeeded")
    assert json.loads((sweep_dir / "sweep.json").read_text())["points"][0]["status"] == "succeeded"
    view = SweepSummary(sweep_dir=sweep_dir, name=sweep_dir.name, metric_name=None)
    view.add(Point(1, ("seed=2",), ("seed=2",)))  # the launcher's own process: its record
    assert [p["index"] for p in json.loads((sweep_dir / "sweep.json").read_text())["points"]] == [1]


def test_a_dir_without_a_record_is_written(tmp_path: Path) -> None:
    SweepSummary(sweep_dir=tmp_path, name="sweep-x", metric_name=None).add(Point(0, ("a=1",), ("a=1",)))
    assert json.loads((tmp_path / "sweep.json").read_text())["name"] == "sweep-x"
