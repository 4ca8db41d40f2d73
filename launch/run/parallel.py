"""Sweep points at once: each point is its own launcher process, watched from one table.

Every point of a sweep is planned and written to its run dir before any starts; then each runs as
`python -m launch run --run-dir <point>` (a child launcher with its own run-dir lock, state and
executor). Why processes rather than threads: a point is then exactly a single run (the same resume,
the same job records, the same Ctrl-C handling), one point's crash cannot take another with it, and
stopping them is a signal each handles as it would a user's Ctrl-C.

How many run at once: `executor.max_parallel` points (None = no limit), and at most `gpu_capacity`
GPUs held by running points (each point counts its biggest cluster stage; Ray sets the capacity to
the cluster's free GPUs, see launch.run.executors.ray_capacity, so points queue here rather than as
pending jobs). A point whose run dir is locked by a launcher that outlived its parent (the sweep
launcher was killed) is watched until that launcher ends, then resumed: nothing runs twice. Job ids
live in each point's own `state.json` and `stages/<name>/{ray,slurm}_job.json`, so a resumed sweep
re-attaches to every point's jobs.

Children run in sessions of their own: a terminal's Ctrl-C reaches only this process, which forwards
SIGINT to every running point, waits for them to stop their jobs, and re-raises KeyboardInterrupt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launch.files import is_locked
from launch.run.exit_codes import INTERRUPTED
from launch.run.point_result import RESULT_ENV, RESULT_FILE
from t3rl_core import outside_json

# Exit codes of a point's launcher (launch.run.exit_codes) → the point's status.
_STATUS_BY_CODE = {0: "succeeded", 130: "interrupted"}


@dataclass(frozen=True)
class PointJob:
    """One point as the scheduler sees it."""

    index: int
    run_dir: Path
    # The child launcher's command line (it runs or resumes the point's run dir).
    argv: tuple[str, ...]
    # GPUs the point holds at its peak on a shared cluster (0 = none counted against the capacity).
    gpus: int = 0
    # Where the child's output goes; None = this process's stdout (one point at a time only).
    log: Path | None = None


@dataclass
class PointProgress:
    """What the table shows of a point."""

    # planned | waiting (its run dir is in use) | running | succeeded | failed | interrupted
    status: str = "planned"
    stage: str = ""
    job: str = ""
    # On `clock`, never the wall clock: a duration stays true when the system clock is set back or
    # forward while the point runs (NTP, a VM resumed), which showed negative times.
    started: float | None = None
    ended: float | None = None
    returncode: int | None = None
    # Why a point did not succeed, in one line.
    error: str | None = None

    @property
    def active(self) -> bool:
        return self.status in ("waiting", "running")

    def elapsed(self, now: float) -> float | None:
        """Seconds it ran until `now` (a `clock()` reading) or its end."""
        if self.started is None:
            return None
        return (self.ended if self.ended is not None else now) - self.started


# What point durations are measured on: monotonic, whatever the system clock does meanwhile.
clock = time.monotonic

OnChange = Callable[[dict[int, PointProgress]], None]


@dataclass
class _Slot:
    job: PointJob
    proc: subprocess.Popen[bytes] | None = None
    log: Any = None


@dataclass
class PointScheduler:
    """Runs `jobs` as child launchers within the limits; calls `on_change` whenever a point moves."""

    jobs: Sequence[PointJob]
    max_parallel: int | None = None
    gpu_capacity: int | None = None
    on_change: OnChange = lambda progress: None
    poll_s: float = 0.5
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def __post_init__(self) -> None:
        self.progress = {job.index: PointProgress() for job in self.jobs}
        self._queue = list(self.jobs)
        self._slots: dict[int, _Slot] = {}

    def run(self) -> dict[int, PointProgress]:
        """Until every point ended; KeyboardInterrupt stops the running ones first, then propagates."""
        try:
            while self._queue or self._slots:
                changed = self._admit()
                changed |= self._poll()
                if changed:
                    self.on_change(self.progress)
                if self._queue or self._slots:
                    time.sleep(self.poll_s)
        except KeyboardInterrupt:
            self._stop_all()
            raise
        return self.progress

    def _admit(self) -> bool:
        changed = False
        while self._queue and self._fits(self._queue[0]):
            job = self._queue.pop(0)
            self._slots[job.index] = _Slot(job)
            self.progress[job.index].status = "waiting"
            changed = True
        for slot in self._slots.values():
            if slot.proc is None and not is_locked(slot.job.run_dir / ".lock"):
                self._start(slot)
                changed = True
        return changed

    def _fits(self, job: PointJob) -> bool:
        if not self._slots:
            return True  # one point always runs, whatever it needs (the executor refuses a misfit)
        if self.max_parallel is not None and len(self._slots) >= self.max_parallel:
            return False
        if self.gpu_capacity is None:
            return True
        held = sum(slot.job.gpus for slot in self._slots.values())
        return held + job.gpus <= self.gpu_capacity

    def _start(self, slot: _Slot) -> None:
        job = slot.job
        out = None
        if job.log is not None:
            job.log.parent.mkdir(parents=True, exist_ok=True)
            slot.log = out = job.log.open("ab")
        result = job.run_dir / RESULT_FILE
        result.unlink(missing_ok=True)
        slot.proc = subprocess.Popen(
            list(job.argv),
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            stdin=subprocess.DEVNULL,
            env={**self.env, RESULT_ENV: str(result)},
            start_new_session=True,
        )
        progress = self.progress[job.index]
        progress.status, progress.started = "running", clock()

    def _poll(self) -> bool:
        changed = False
        for index, slot in list(self._slots.items()):
            progress = self.progress[index]
            stage, job = _current_stage(slot.job.run_dir)
            if (stage, job) != (progress.stage, progress.job):
                progress.stage, progress.job = stage, job
                changed = True
            if slot.proc is None or slot.proc.poll() is None:
                continue
            self._finish(index, slot)
            changed = True
        return changed

    def _finish(self, index: int, slot: _Slot) -> None:
        assert slot.proc is not None
        code = slot.proc.returncode
        progress = self.progress[index]
        progress.returncode, progress.ended = code, clock()
        progress.status = _STATUS_BY_CODE.get(code, "failed")
        if progress.status != "succeeded":
            progress.error = _why(slot.job.run_dir, code)
        if slot.log is not None:
            slot.log.close()
        del self._slots[index]

    def _stop_all(self) -> None:
        """SIGINT to every running point (each stops its jobs and records it), then wait for them."""
        for slot in self._slots.values():
            if slot.proc is not None and slot.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(slot.proc.pid, signal.SIGINT)
        for index, slot in list(self._slots.items()):
            if slot.proc is None:
                self.progress[index].status = "planned"
                del self._slots[index]
                continue
            slot.proc.wait()
            self._finish(index, slot)
        self.on_change(self.progress)


def _why(run_dir: Path, code: int) -> str:
    """One line on why a point's launcher did not succeed: what it said, else its failed stage's record."""
    try:
        error = outside_json.read_file(run_dir / RESULT_FILE).get("error")
    except (OSError, ValueError, AttributeError):
        error = None
    if error:
        return str(error)
    try:
        stages = outside_json.read_file(run_dir / "state.json")["stages"]
        failed = [(n, r) for n, r in stages.items() if r.get("status") in ("failed", "stopped")]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        failed = []
    if failed:
        name, record = failed[-1]
        return f"stage {name}: {record.get('message', '')}".strip()
    if code == 130:
        return INTERRUPTED
    return f"the point's launcher exited {code} (see {run_dir / 'launcher.log'})"


def _current_stage(run_dir: Path) -> tuple[str, str]:
    """The stage a point is at (the running one, else the last recorded) and its job id, if any."""
    try:
        stages = outside_json.read_file(run_dir / "state.json")["stages"]
    except (OSError, ValueError, KeyError, TypeError):
        return "", ""
    if not isinstance(stages, dict) or not stages:
        return "", ""
    running = [name for name, record in stages.items() if record.get("status") == "running"]
    name = running[0] if running else list(stages)[-1]
    handle = stages[name].get("handle") or {}
    job = handle.get("ray_job") or handle.get("slurm_job") or ""
    if not job and handle.get("pgid"):
        job = f"pgid {handle['pgid']}"
    status = stages[name].get("status", "")
    return (name if running else f"{name} ({status})"), str(job)
