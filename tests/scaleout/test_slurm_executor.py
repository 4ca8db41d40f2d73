"""executor=slurm through submitit's real SlurmExecutor, against a fake SLURM (fake_slurm/ on PATH).

The fake sbatch really runs the submission file in the background (as SLURM would on the first
node), so submitit's job files, sacct polling and result pickles are exercised for real; inside the
job, the rendered script's srun/ray/scontrol calls go to the recording fakes.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.run.executors.slurm import SlurmExecutor, read_record
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_plans import NoteReporter, two_stage_plan

FAKES = Path(__file__).parent / "fake_slurm"
DRIVER = Path(__file__).parent / "slurm_stage_driver.py"
pytestmark = pytest.mark.slow


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "calls.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{FAKES}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(tmp_path / "slurm-state"))
    monkeypatch.setenv("FAKE_NODELIST", "node1,node2")
    monkeypatch.setenv("STUB_LOG", str(log))
    monkeypatch.setenv("T3RL_RAY_POLL_S", "0.05")
    return log


def _executor() -> SlurmExecutor:
    executor = SlurmExecutor(out=io.StringIO())
    executor.poll_s = 0.2
    return executor


def _calls(log: Path, word: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith(word)]


def _wait_for(predicate: object, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_two_node_stage_runs_ray_bootstrap_inside_its_slurm_job(fake_slurm: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = run_pipeline(two_stage_plan(run_dir, gpus=16, nodes=2), RunDir(run_dir), _executor())
    assert result.status == "succeeded", result.results
    assert len(_calls(fake_slurm, "sbatch")) == 2  # prep and train, one job each
    script = (run_dir / "stages/train/job.sbatch").read_text()
    assert "#SBATCH --nodes=2" in script and "#SBATCH --gpus-per-node=8" in script
    record = read_record(run_dir / "stages/train")
    assert record is not None and record.state == "COMPLETED" and record.job_id == "1002"
    handle = json.loads((run_dir / "state.json").read_text())["stages"]["train"]["handle"]
    assert handle == {"slurm_job": "1002", "folder": str(run_dir / "slurm" / "train"), "executor": "slurm"}
    ray = _calls(fake_slurm, "ray ")
    assert ray[0].startswith("ray node=node1 start --head")
    assert ray[1].startswith("ray node=node2 start --address=10.0.0.1:6379 --num-gpus=8")
    assert ray[2].startswith("ray node=node1 job submit")
    assert {c.split()[1] for c in ray[3:]} == {"node=node1", "node=node2"} and all(
        "stop" in c for c in ray[3:]
    )
    assert "fake slime job running on node1" in (run_dir / "stages/train/log.txt").read_text()
    assert (run_dir / "stages/prep/prepared.txt").read_text() == "prepared\n"


def test_resume_reattaches_to_the_running_job_and_resubmits_a_failed_one(
    fake_slurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("FAKE_JOB_SECONDS", "3")
    driver = subprocess.Popen([sys.executable, str(DRIVER), str(run_dir)], env=dict(os.environ))
    try:
        # Until the job id is both in slurm_job.json and (as the stage's handle) in state.json.
        state = run_dir / "state.json"
        _wait_for(
            lambda: state.exists() and json.loads(state.read_text())["stages"].get("train", {}).get("handle")
        )
    finally:
        driver.send_signal(signal.SIGKILL)  # the launcher dies; the SLURM job does not
        driver.wait()
    first = read_record(run_dir / "stages/train")
    assert first is not None and first.state == "PENDING"

    reporter = NoteReporter()
    result = run_pipeline(
        two_stage_plan(run_dir, gpus=16, nodes=2), RunDir(run_dir), _executor(), reporter=reporter
    )
    assert result.status == "succeeded"
    assert reporter.notes == [
        f"SLURM job {first.job_id} outlived the previous t3rl process; re-attaching to it"
    ]
    assert [d.action for d in result.decisions] == ["cached", "resume"]
    assert len(_calls(fake_slurm, "sbatch")) == 2  # no new job: it was re-attached
    assert read_record(run_dir / "stages/train").job_id == first.job_id

    # A job that failed is submitted again when the stage resumes.
    monkeypatch.setenv("FAKE_JOB_SECONDS", "0")
    monkeypatch.setenv("FAKE_JOB_EXIT", "3")
    plan = two_stage_plan(run_dir, gpus=16, nodes=2, lines=2)
    failed = run_pipeline(plan, RunDir(run_dir), _executor())
    assert failed.status == "failed" and "ended FAILED" in failed.results["train"].message
    monkeypatch.setenv("FAKE_JOB_EXIT", "0")
    again = run_pipeline(plan, RunDir(run_dir), _executor())
    assert [d.action for d in again.decisions] == ["cached", "resume"] and again.status == "succeeded"
    assert read_record(run_dir / "stages/train").attempt == 2
    assert len(_calls(fake_slurm, "sbatch")) == 4
    state = json.loads((run_dir / "state.json").read_text())["stages"]["train"]
    assert state["status"] == "succeeded"


def test_ctrl_c_cancels_the_job(fake_slurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("FAKE_JOB_SECONDS", "60")
    driver = subprocess.Popen([sys.executable, str(DRIVER), str(run_dir)], env=dict(os.environ))
    _wait_for(lambda: "job submit" in fake_slurm.read_text())
    driver.send_signal(signal.SIGINT)
    assert driver.wait(timeout=30) != 0
    record = read_record(run_dir / "stages/train")
    assert record is not None and record.state == "CANCELLED"
    assert _calls(fake_slurm, "scancel") == [f"scancel {record.job_id}"]
    assert json.loads((run_dir / "state.json").read_text())["stages"]["train"]["status"] == "stopped"
    # The job's own processes are gone with it (its `sleep 60` did not finish).
    state_file = Path(os.environ["FAKE_SLURM_DIR"]) / f"{record.job_id}.state"
    assert state_file.read_text().strip() == "CANCELLED"
