"""How many GPUs of a Ray cluster a sweep may fill now: the free ones, not the installed ones.

The dashboard's `GET /api/cluster_status` carries the load report `ray status` prints: per resource
`[used, total]` over the live nodes (`clusterStatus.loadMetricsReport.usage`). GPUs held by other
users' jobs are `used`, so they are not counted. The report is refreshed by the head's monitor every
few seconds; a cluster whose monitor has not written one yet falls back to the live nodes' total GPUs
(with a note saying so).

GPUs the sweep's own points already hold (a resumed sweep re-attaching to jobs its killed launcher
left running) are `used` too, yet the scheduler counts them against the capacity itself: they are
added back, so a resume is not throttled by its own jobs.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launch.config.errors import ConfigError, Problem
from launch.run.executors.ray_jobs import cluster_gpus, read_record
from t3rl_core import outside_json

# Seconds the dashboard may take to answer the status request.
STATUS_TIMEOUT_S = 10.0
LIVE_JOB_STATES = frozenset({"PENDING", "RUNNING"})


@dataclass(frozen=True)
class Capacity:
    """The GPUs a sweep may hold at once, and how that number was found (for the sweep's output)."""

    gpus: int
    note: str


def _get_status(address: str) -> Mapping[str, Any]:
    with urllib.request.urlopen(f"{address.rstrip('/')}/api/cluster_status", timeout=STATUS_TIMEOUT_S) as r:
        return outside_json.loads(r.read(), f"{address}'s /api/cluster_status")


def gpu_usage(
    address: str, get_status: Callable[[str], Mapping[str, Any]] = _get_status
) -> tuple[float, float] | None:
    """(used, total) GPUs of the live cluster from its load report; None when no report exists yet."""
    try:
        body = get_status(address)
    except (OSError, ValueError) as error:  # connection refused, timeout, HTTP error, not JSON
        raise ConfigError(
            [
                Problem(
                    key="executor.address",
                    message=f"cannot read the Ray cluster's status at {address}/api/cluster_status: {error}",
                    fix="start the cluster (ray start --head) or correct executor.address",
                )
            ]
        ) from None
    status = (body.get("data") or {}).get("clusterStatus") or {}
    usage = (status.get("loadMetricsReport") or {}).get("usage")
    if not isinstance(usage, Mapping):
        return None
    used, total = usage.get("GPU", (0.0, 0.0))
    return float(used), float(total)


def sweep_capacity(
    address: str,
    own_gpus: float = 0.0,
    get_status: Callable[[str], Mapping[str, Any]] = _get_status,
    total_gpus: Callable[[str], int] | None = None,
) -> Capacity:
    """The free GPUs plus `own_gpus` (held by this sweep's points already); the total without a report."""
    usage = gpu_usage(address, get_status)
    if usage is None:
        total = (total_gpus or cluster_gpus)(address)
        return Capacity(
            total,
            f"{total} GPU(s) installed (the cluster has no load report yet, so none is counted as busy)",
        )
    used, total = usage
    free = max(total - used, 0.0)
    # A pending job of the sweep's holds nothing yet: never more than the cluster has.
    gpus = int(min(free + own_gpus, total))
    busy = used - own_gpus
    return Capacity(
        gpus, f"{gpus} of {total:g} GPU(s) free for the sweep ({max(busy, 0.0):g} held by other jobs)"
    )


def own_live_gpus(points: Sequence[tuple[Path, float]], live_submissions: Callable[[], set[str]]) -> float:
    """GPUs held by points (run dir, GPUs) one of whose stages has a pending or running Ray job."""
    recorded = {
        run_dir: {
            r.submission_id for d in (run_dir / "stages").glob("*") if (r := read_record(d)) is not None
        }
        for run_dir, _ in points
    }
    if not any(recorded.values()):
        return 0.0
    live = live_submissions()
    return sum(gpus for run_dir, gpus in points if recorded[run_dir] & live)


def live_submission_ids(address: str) -> set[str]:
    """Submission ids of the cluster's pending and running jobs (Ray's Job Submission SDK)."""
    from ray.job_submission import JobSubmissionClient  # lazy: ray, only with a Ray cluster

    jobs = JobSubmissionClient(address).list_jobs()
    return {j.submission_id for j in jobs if j.submission_id and str(j.status.value) in LIVE_JOB_STATES}
