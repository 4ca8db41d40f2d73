"""The sweep scheduler (launch.run.parallel): points as child processes, within max_parallel and a
GPU budget; a failing point never stops the others; Ctrl-C reaches every running point; a point whose
run dir is still locked by a surviving launcher is waited for, never run twice at once.

Each point here is a tiny Python child that records when it ran (time.time()), so overlap is measured,
not assumed. Points that must run at once wait for each other to start (each child's `ready` file):
on a busy machine one child's interpreter may start after another's whole run, and a scheduler that
ran them one after another leaves the first waiting until its deadline, failed."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from launch.run.parallel import PointJob, PointScheduler

# Writes its start and end times, sleeps, exits with the given code; on SIGINT records "stopped", exits 130.
# Its `ready` file (beside its times) says its SIGINT handler is in place; before it sleeps it waits for
# the `ready` files of the points named after the code (they run at the same time as this one), and
# exits 99 ("alone") if they never start.
CHILD = """
import json, os, signal, sys, time
out, seconds, code, peers = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
start = time.time()
def stopped(*_):
    json.dump({"start": start, "end": time.time(), "how": "stopped"}, open(out, "w"))
    sys.exit(130)
signal.signal(signal.SIGINT, stopped)
open(os.path.join(os.path.dirname(out), "ready"), "w").close()
deadline = time.monotonic() + 120  # a failure guard only: the peers' start is the event waited for
while not all(os.path.exists(peer) for peer in peers):
    if time.monotonic() > deadline:
        json.dump({"start": start, "end": time.time(), "how": "alone"}, open(out, "w"))
        sys.exit(99)
    time.sleep(0.02)
time.sleep(seconds)
json.dump({"start": start, "end": time.time(), "how": "done"}, open(out, "w"))
sys.exit(code)
"""


def _job(
    tmp_path: Path,
    index: int,
    seconds: float = 0.6,
    code: int = 0,
    gpus: int = 0,
    with_points: tuple[int, ...] = (),
) -> PointJob:
    """Point `index`; it sleeps only once the points `with_points` have started too."""
    run_dir = tmp_path / f"p{index:02d}"
    run_dir.mkdir(exist_ok=True)
    peers = [str(tmp_path / f"p{peer:02d}" / "ready") for peer in with_points]
    argv = (sys.executable, "-c", CHILD, str(run_dir / "times.json"), str(seconds), str(code), *peers)
    return PointJob(index=index, run_dir=run_dir, argv=argv, gpus=gpus, log=run_dir / "launcher.log")


def _times(job: PointJob) -> dict[str, float | str]:
    return json.loads((job.run_dir / "times.json").read_text())


def _overlap(a: dict, b: dict) -> bool:
    return max(a["start"], b["start"]) < min(a["end"], b["end"])


def test_points_run_at_once_and_a_failure_does_not_stop_the_others(tmp_path: Path) -> None:
    jobs = [
        _job(tmp_path, 0, seconds=1.0, with_points=(1, 2)),
        _job(tmp_path, 1, seconds=0.2, code=3, with_points=(0,)),
        _job(tmp_path, 2, seconds=1.0, with_points=(0,)),
    ]
    progress = PointScheduler(jobs, max_parallel=None, poll_s=0.05).run()
    assert [progress[i].status for i in range(3)] == ["succeeded", "failed", "succeeded"]
    assert progress[1].returncode == 3
    times = [_times(job) for job in jobs]
    assert _overlap(times[0], times[2]) and _overlap(times[0], times[1])


def test_max_parallel_one_runs_points_one_after_another(tmp_path: Path) -> None:
    jobs = [_job(tmp_path, i, seconds=0.3) for i in range(3)]
    PointScheduler(jobs, max_parallel=1, poll_s=0.05).run()
    times = sorted((_times(job) for job in jobs), key=lambda t: t["start"])
    assert all(a["end"] <= b["start"] for a, b in itertools.pairwise(times))


def test_the_gpu_budget_limits_how_many_points_hold_gpus_at_once(tmp_path: Path) -> None:
    # 3 points of 1 GPU on 2 GPUs: two at once, the third after one ended.
    jobs = [_job(tmp_path, i, seconds=0.8, gpus=1, with_points=(1 - i,)) for i in range(2)]
    jobs.append(_job(tmp_path, 2, seconds=0.8, gpus=1))
    PointScheduler(jobs, max_parallel=None, gpu_capacity=2, poll_s=0.05).run()
    a, b, c = (_times(job) for job in jobs)
    assert _overlap(a, b)
    assert c["start"] >= min(a["end"], b["end"])


def test_a_point_larger_than_the_budget_still_runs_alone(tmp_path: Path) -> None:
    jobs = [_job(tmp_path, 0, seconds=0.1, gpus=16)]
    assert PointScheduler(jobs, gpu_capacity=8, poll_s=0.05).run()[0].status == "succeeded"


def test_ctrl_c_stops_every_running_point_and_leaves_the_queue(tmp_path: Path) -> None:
    # A child that was not stopped sleeps its 120 s out and records "done", not "stopped".
    jobs = [_job(tmp_path, i, seconds=120) for i in range(3)]
    scheduler = PointScheduler(jobs, max_parallel=2, poll_s=0.05)
    main = threading.get_ident()

    def interrupt_when_both_run() -> None:
        # Once both running children have their SIGINT handler in place (their `ready` files).
        deadline = time.monotonic() + 120
        while not all((job.run_dir / "ready").exists() for job in jobs[:2]):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt_when_both_run, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        scheduler.run()
    assert [scheduler.progress[i].status for i in range(3)] == ["interrupted", "interrupted", "planned"]
    assert _times(jobs[0])["how"] == "stopped" and _times(jobs[1])["how"] == "stopped"
    assert not (jobs[2].run_dir / "times.json").exists()


def test_a_point_locked_by_a_surviving_launcher_waits_for_it(tmp_path: Path) -> None:
    job = _job(tmp_path, 0, seconds=0.1)
    lock = (job.run_dir / ".lock").open("a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    released: list[float] = []
    statuses: list[str] = []
    seen_waiting = threading.Event()

    def release_once_seen_waiting() -> None:
        # The scheduler's own report of the point waiting, not a guess at how long it takes to get there.
        seen_waiting.wait(120)
        released.append(time.time())
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()

    def changed(progress: dict) -> None:
        statuses.append(progress[0].status)
        if progress[0].status == "waiting":
            seen_waiting.set()

    threading.Thread(target=release_once_seen_waiting, daemon=True).start()
    scheduler = PointScheduler([job], poll_s=0.05, on_change=changed)
    assert scheduler.run()[0].status == "succeeded"
    assert statuses[0] == "waiting" and "running" in statuses
    assert _times(job)["start"] >= released[0]


def test_a_points_output_goes_to_its_log_and_its_stage_is_read_from_state(tmp_path: Path) -> None:
    run_dir = tmp_path / "p00"
    run_dir.mkdir()
    state = {"version": 1, "stages": {"train": {"status": "running", "handle": {"ray_job": "t3rl-x-1"}}}}
    code = (
        "import json, sys, time; print('hello from the point', flush=True);"
        f"json.dump({state!r}, open(sys.argv[1], 'w')); time.sleep(0.6)"
    )
    job = PointJob(
        0, run_dir, (sys.executable, "-c", code, str(run_dir / "state.json")), log=run_dir / "l.log"
    )
    seen: list[tuple[str, str]] = []
    PointScheduler(
        [job], poll_s=0.05, on_change=lambda p: seen.append((p[0].stage, p[0].job)), env=dict(os.environ)
    ).run()
    assert ("train", "t3rl-x-1") in seen
    assert "hello from the point" in (run_dir / "l.log").read_text()


@pytest.mark.slow
def test_slurm_points_are_separate_jobs_running_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through submitit's real SlurmExecutor against the fake SLURM of the suite (fake_slurm/ on PATH)."""
    here = Path(__file__).parent
    calls = tmp_path / "calls.log"
    calls.touch()
    monkeypatch.setenv("PATH", f"{here / 'fake_slurm'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM_DIR", str(tmp_path / "slurm-state"))
    monkeypatch.setenv("FAKE_NODELIST", "node1,node2")
    monkeypatch.setenv("STUB_LOG", str(calls))
    # Each train job runs until the test has seen both points in their train stage: on a busy machine
    # one point's launcher may start after the other's whole job (2 s each, as it was) has ended.
    go = tmp_path / "both-seen"
    monkeypatch.setenv("FAKE_JOB_UNTIL", str(go))
    jobs = []
    for i in range(2):
        run_dir = tmp_path / f"p{i:02d}"
        run_dir.mkdir()
        argv = (sys.executable, str(here / "sweep_point_driver.py"), "slurm", "-", str(run_dir), "2", "0")
        jobs.append(PointJob(i, run_dir, argv, gpus=16, log=run_dir / "launcher.log"))
    snapshots: list[dict[int, tuple[str, str]]] = []

    def changed(progress: dict) -> None:
        snapshots.append({i: (x.stage, x.job) for i, x in progress.items()})
        if all(x.stage == "train" and x.job for x in progress.values()):
            go.touch()

    scheduler = PointScheduler(jobs, poll_s=0.1, on_change=changed)
    progress = scheduler.run()
    assert [p.status for p in progress.values()] == ["succeeded", "succeeded"], [
        (j.run_dir / "launcher.log").read_text()[-2000:] for j in jobs
    ]
    # At one moment both points were in their train stage, each in its own SLURM job.
    both = [s for s in snapshots if s[0][0] == "train" and s[1][0] == "train" and s[0][1] and s[1][1]]
    assert both and both[0][0][1] != both[0][1][1]
    assert len([c for c in calls.read_text().splitlines() if c.startswith("sbatch")]) == 4
