"""A sweep point run on its own (`t3rl run --run-dir <sweep>/pNN`, the line a sweep gives for changing
one point) records how it ended in its sweep's record too.

The sweep records its points itself while its launcher runs them (in process, or through
`launch.run.point_result` for a point's own launcher). Run alone, a point left `sweep.json`, `sweep.md`
and `t3rl runs show <sweep>` saying `failed` (or another metric) for a point whose run dir says it
succeeded since: two records of one point that disagreed. Here the point's outcome goes into the sweep's
record under the sweep's lock; while a sweep launcher holds it, that launcher records its points, and
the run says so.
"""

from __future__ import annotations

import os
from pathlib import Path

from launch.files import LockHeld, exclusive_lock
from launch.run.point_record import point_outcome
from launch.run.point_result import RESULT_ENV
from launch.run.record_files import RunDirError
from launch.run.rundir import now
from launch.run.sweep import SweepSummary
from launch.run.sweep_liveness import SWEEP_LOCK
from t3rl_core import outside_json


def record_in_sweep(run_dir: Path, code: int) -> str | None:
    """Record the run of `run_dir` that ended with exit `code` in the sweep it is a point of; a line to
    print when the sweep's record could not take it (None when recorded, or not a point run alone)."""
    sweep_dir = run_dir.resolve().parent
    if os.environ.get(RESULT_ENV) or not (sweep_dir / "sweep.json").is_file():
        return None  # not a point, or a point its sweep's launcher started: that launcher records it
    try:
        with exclusive_lock(sweep_dir / SWEEP_LOCK):
            summary = SweepSummary.load(sweep_dir)
            here = run_dir.resolve()
            points = summary.points.items()
            index = next((i for i, r in points if r.run_dir and Path(r.run_dir).resolve() == here), None)
            if index is None or summary.record != "run":
                return None
            if summary.search is not None:  # its record is its study's, which this run never reached
                return (
                    f"note: {sweep_dir} is an Optuna search: this run of a trial is not in its study's record"
                )
            status, metric, error = _outcome(run_dir, code, summary.metric_name)
            summary.update(index, status=status, metric=metric, error=error, finished_at=now())
    except LockHeld:
        return (
            f"note: {sweep_dir}'s launcher is running; its record of this point is the launcher's "
            f"(`t3rl run --run-dir {sweep_dir}` resumes every point not succeeded)"
        )
    except (OSError, RunDirError) as error:
        return f"note: {sweep_dir / 'sweep.json'} was not updated: {error}"
    return None


def _outcome(run_dir: Path, code: int, metric_name: str | None) -> tuple[str, float | None, str | None]:
    """(status, metric, error) as the sweep records a point that ended with `code`."""
    if code != 0:
        stages = outside_json.read_file(run_dir / "state.json").get("stages", {})
        failed = [(n, r) for n, r in stages.items() if r.get("status") in ("failed", "stopped")]
        if failed:
            name, record = failed[-1]
            return "failed", None, f"stage {name}: {record.get('message') or ''}".strip()
        return "failed", None, f"exit code {code}"
    own = point_outcome(str(run_dir), metric_name)
    return own.status, own.metric, own.error
