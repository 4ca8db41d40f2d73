"""executor=ray against a REAL Ray head on 127.0.0.1 (CPU only, two declared GPUs: conftest.py's).

The "train" stage is a slime-shaped job (`Stage.slime_job`) whose entrypoint is a Python one-liner,
submitted through Ray's Job Submission SDK exactly as a real train stage would be.
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

from launch.config.errors import ConfigError
from launch.config.schema import RayExecutorConfig
from launch.plan.build import Plan
from launch.run.executors.ray_jobs import RayExecutor, read_record, run_key
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir

sys.path.insert(0, str(Path(__file__).parent))
from ray_cluster import LocalRay
from ray_plans import NoteReporter, prepare_stage, train_stage, two_stage_plan

pytestmark = pytest.mark.slow
DRIVER = Path(__file__).parent / "ray_stage_driver.py"
STOP_DEADLINE_S = 300.0


def _submissions(cluster: LocalRay, run_dir: Path) -> list[str]:
    from ray.job_submission import JobSubmissionClient

    key = run_key(run_dir)
    jobs = JobSubmissionClient(cluster.dashboard).list_jobs()
    return sorted(j.submission_id for j in jobs if (j.metadata or {}).get("t3rl_run") == key)


def _wait_for(path: Path, text: str, driver: subprocess.Popen[str], timeout_s: float = 90.0) -> None:
    """Until `text` is in `path` (seconds for a job's first lines; more on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and text in path.read_text()):
        if time.monotonic() > deadline or driver.poll() is not None:
            driver.kill()
            driver.wait()
            log = path.read_text() if path.exists() else "(no log)"
            output = (Path(str(driver.args[3])) / "driver.out").read_text()
            pytest.fail(f"{text!r} never appeared in {path}:\n{log}\ndriver:\n{output}")
        time.sleep(0.1)


def _driver(cluster: LocalRay, run_dir: Path, lines: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    output = (run_dir / "driver.out").open("w")
    return subprocess.Popen(
        [sys.executable, str(DRIVER), cluster.dashboard, str(run_dir), str(lines)],
        stdout=output, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip


def _executor(cluster: LocalRay, **config: object) -> RayExecutor:
    return RayExecutor(RayExecutorConfig(address=cluster.dashboard, **config), out=io.StringIO())


def test_cluster_too_small_is_refused_before_anything_runs(cluster: LocalRay, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan = Plan(name="big", run_dir=run_dir, stages=(prepare_stage(run_dir), train_stage(gpus=8)))
    with pytest.raises(ConfigError) as err:
        run_pipeline(plan, RunDir(run_dir), _executor(cluster))
    assert "has 2 GPU(s) on 1 GPU node(s)" in str(err.value) and "needs 8 GPU(s)" in str(err.value)
    assert _submissions(cluster, run_dir) == []
    assert not (run_dir / "stages/prep/prepared.txt").exists()  # not even the local stage ran


def test_streams_the_log_and_a_resumed_run_reattaches_without_resubmitting(
    cluster: LocalRay, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    driver = _driver(cluster, run_dir, lines=8)
    log = run_dir / "stages/train/log.txt"
    try:
        # The launcher dies while the job runs: the job keeps running on the cluster.
        _wait_for(log, "train line 1 from-runtime-env", driver)
    finally:
        driver.kill()
        driver.wait()
    first = read_record(run_dir / "stages/train")
    assert first is not None and first.attempt == 1
    state = json.loads((run_dir / "state.json").read_text())["stages"]
    assert state["prep"]["status"] == "succeeded" and state["train"]["status"] == "running"
    assert (
        run_dir / "stages/prep/prepared.txt"
    ).read_text() == "prepared\n"  # ran here (other_stages: local)

    executor, reporter = _executor(cluster), NoteReporter()
    result = run_pipeline(two_stage_plan(run_dir, lines=8), RunDir(run_dir), executor, reporter=reporter)
    assert result.status == "succeeded"
    assert reporter.notes == [
        f"Ray job {first.submission_id} outlived the previous t3rl process; re-attaching to it"
    ]
    assert "train line 7 from-runtime-env" in executor.out.getvalue()  # the terminal saw the rest live
    assert [d.action for d in result.decisions] == ["cached", "resume"]
    assert _submissions(cluster, run_dir) == [first.submission_id]
    assert read_record(run_dir / "stages/train").status == "SUCCEEDED"
    handle = json.loads((run_dir / "state.json").read_text())["stages"]["train"]["handle"]
    assert handle == {"ray_job": first.submission_id, "address": cluster.dashboard, "executor": "ray"}
    text = log.read_text()
    for i in range(8):
        assert text.count(f"train line {i} from-runtime-env") == 1, text

    again = run_pipeline(two_stage_plan(run_dir, lines=8), RunDir(run_dir), _executor(cluster))
    assert [d.action for d in again.decisions] == ["cached", "cached"]
    assert _submissions(cluster, run_dir) == [first.submission_id]


def test_ctrl_c_stops_the_job_and_a_failed_job_is_resubmitted(cluster: LocalRay, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    driver = _driver(cluster, run_dir, lines=200)
    _wait_for(run_dir / "stages/train/log.txt", "train line 0", driver)
    driver.send_signal(signal.SIGINT)
    # The driver asks the head to stop the job and waits up to its stop_grace_s (20 s) for it to end: a
    # minute was too short once with the load at 6 on 2 cores (the dashboard answers slowly then).
    assert driver.wait(timeout=STOP_DEADLINE_S) != 0, (run_dir / "driver.out").read_text()
    record = read_record(run_dir / "stages/train")
    assert record is not None and record.status == "STOPPED"
    assert json.loads((run_dir / "state.json").read_text())["stages"]["train"]["status"] == "stopped"

    # A changed command supersedes the stage dir; the new job must not collide with the stopped one's id.
    plan = two_stage_plan(run_dir, lines=1, exit_code=3)
    result = run_pipeline(plan, RunDir(run_dir), _executor(cluster))
    assert [d.action for d in result.decisions] == ["cached", "run"]
    assert result.status == "failed" and "failed" in result.results["train"].message
    # Same command again: the failed job is not re-attached but submitted anew, in place.
    again = run_pipeline(plan, RunDir(run_dir), _executor(cluster))
    assert [d.action for d in again.decisions] == ["cached", "resume"]
    assert [s.rsplit("-", 1)[1] for s in _submissions(cluster, run_dir)] == ["1", "2", "3"]
    assert read_record(run_dir / "stages/train").attempt == 3


def test_other_stages_can_run_as_ray_jobs_too(cluster: LocalRay, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    plan = Plan(name="prep-only", run_dir=run_dir, stages=(prepare_stage(run_dir),))
    result = run_pipeline(plan, RunDir(run_dir), _executor(cluster, other_stages="ray"))
    assert result.status == "succeeded", result.results
    (job,) = _submissions(cluster, run_dir)
    assert job.endswith("-prep-1")
    # The stage's script ran on the cluster (here: this machine) as `bash -c <command.sh body>`.
    assert (run_dir / "stages/prep/prepared.txt").read_text() == "prepared\n"
