"""Sweep points at once on a REAL Ray head (127.0.0.1, CPU only, two declared GPUs: conftest.py's).

Each point is its own launcher process (tests/scaleout/sweep_point_driver.py: a local prepare stage
and a 1-GPU "train" stage submitted through Ray's Job Submission SDK). The proof of parallelism is
Ray's own record of when each job started and ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.run.executors.ray_capacity import gpu_usage, sweep_capacity
from launch.run.executors.ray_jobs import cluster_gpus, read_record, run_key
from launch.run.parallel import PointJob, PointScheduler

sys.path.insert(0, str(Path(__file__).parent))
from ray_cluster import LocalRay

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent


def _jobs_of(cluster: LocalRay, run_dir: Path) -> list[object]:
    from ray.job_submission import JobSubmissionClient

    key = run_key(run_dir)
    jobs = JobSubmissionClient(cluster.dashboard).list_jobs()
    return sorted(
        (j for j in jobs if (j.metadata or {}).get("t3rl_run") == key), key=lambda j: j.submission_id
    )


def _point(
    cluster: LocalRay, run_dir: Path, index: int, lines: int, code: int = 0, barrier: str = ""
) -> PointJob:
    """A point's launcher; with `barrier` (DIR:COUNT) its train job waits for COUNT jobs to start."""
    run_dir.mkdir(parents=True, exist_ok=True)
    argv = (
        sys.executable, str(HERE / "sweep_point_driver.py"), "ray", cluster.dashboard, str(run_dir),
        str(lines), str(code), *([barrier] if barrier else []),
    )  # fmt: skip
    return PointJob(index, run_dir, argv, gpus=1, log=run_dir / "launcher.log")


def test_points_run_as_concurrent_ray_jobs_up_to_the_clusters_gpus(cluster: LocalRay, tmp_path: Path) -> None:
    capacity = cluster_gpus(cluster.dashboard)
    assert capacity == 2
    # Points 0 and 1 run at once: each job waits for the other to start (a 2.4 s job could end before
    # the other point's launcher, started at the same time, had submitted its own on a busy machine).
    (tmp_path / "barrier").mkdir()
    barrier = f"{tmp_path / 'barrier'}:2"
    points = [
        _point(
            cluster,
            tmp_path / f"p{i:02d}",
            i,
            lines=6,
            code=3 if i == 1 else 0,
            barrier=barrier if i < 2 else "",
        )
        for i in range(3)
    ]
    progress = PointScheduler(points, gpu_capacity=capacity, poll_s=0.1).run()
    # The failing point 1 stopped nothing else.
    assert [progress[i].status for i in range(3)] == ["succeeded", "failed", "succeeded"], [
        (p.run_dir / "launcher.log").read_text()[-2000:] for p in points
    ]
    (a,), (b,), (c,) = (_jobs_of(cluster, p.run_dir) for p in points)
    # Ray's own clock (ms): the first two jobs ran at the same time; the third waited for a free GPU.
    assert max(a.start_time, b.start_time) < min(a.end_time, b.end_time)
    assert c.start_time >= min(a.end_time, b.end_time)
    print(
        "\nray jobs (start, end) ms:",
        [(j.submission_id, j.start_time, j.end_time) for j in (a, b, c)],
    )


def test_gpus_another_job_holds_are_not_the_sweeps(cluster: LocalRay) -> None:
    from ray.job_submission import JobSubmissionClient

    client = JobSubmissionClient(cluster.dashboard)
    other = client.submit_job(entrypoint="sleep 600", entrypoint_num_gpus=1)  # someone else's job
    try:
        deadline = time.monotonic() + 60
        # The head's monitor refreshes the load report every few seconds.
        while gpu_usage(cluster.dashboard) != (1.0, 2.0):
            assert time.monotonic() < deadline, gpu_usage(cluster.dashboard)
            time.sleep(0.5)
        capacity = sweep_capacity(cluster.dashboard)
        # Of the 2 GPUs, 1 is the other job's (the scheduler's use of the capacity: the test above).
        assert capacity.gpus == 1, capacity
        assert cluster_gpus(cluster.dashboard) == 2
    finally:
        client.stop_job(other)


def test_a_killed_sweep_launcher_reattaches_to_every_points_job(cluster: LocalRay, tmp_path: Path) -> None:
    run_dirs = [tmp_path / f"p{i:02d}" for i in range(2)]
    for run_dir in run_dirs:
        run_dir.mkdir()
    output = (tmp_path / "launcher.out").open("w")
    launcher = subprocess.Popen(
        [sys.executable, str(HERE / "sweep_launcher_driver.py"), cluster.dashboard, "20",
         *map(str, run_dirs)],
        stdout=output, stderr=subprocess.STDOUT, env=dict(os.environ), start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 90
    try:
        # Until both points' train jobs are running on the cluster.
        while not all(
            (job := _jobs_of(cluster, d)) and str(job[0].status.value) == "RUNNING" for d in run_dirs
        ):
            assert time.monotonic() < deadline and launcher.poll() is None, (
                tmp_path / "launcher.out"
            ).read_text()
            time.sleep(0.2)
    finally:
        # The launcher and every point's launcher die at once (a lost login session); the jobs do not.
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()
        _kill_point_launchers(run_dirs)
    before = {d: read_record(d / "stages/train") for d in run_dirs}

    progress = PointScheduler(
        [_point(cluster, d, i, lines=20) for i, d in enumerate(run_dirs)], poll_s=0.1
    ).run()
    assert [p.status for p in progress.values()] == ["succeeded", "succeeded"]
    for run_dir in run_dirs:
        (job,) = _jobs_of(cluster, run_dir)  # re-attached: no second submission
        assert job.submission_id == before[run_dir].submission_id
        log = (run_dir / "stages/train/log.txt").read_text()
        assert all(log.count(f"train line {i} ") == 1 for i in range(20))


def _kill_point_launchers(run_dirs: list[Path]) -> None:
    """Each point's launcher runs in a session of its own: kill those too (by the pids in /proc)."""
    import psutil

    wanted = {str(d) for d in run_dirs}
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if any(arg in wanted for arg in cmdline) and "sweep_point_driver.py" in " ".join(cmdline):
            proc.kill()
            proc.wait(5)
