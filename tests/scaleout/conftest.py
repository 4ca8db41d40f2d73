"""One real Ray head (127.0.0.1, CPU only, two declared GPUs) for every test that asks for `cluster`.

A head takes seconds of both cores to start, so the modules share one per test process; under
pytest-xdist they run on one worker (SAME_WORKER in tests/conftest.py), so one head starts. Each test
starts on an idle cluster: no job of an earlier test pending or running, no GPU held in the load report.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.run.executors.ray_capacity import gpu_usage

sys.path.insert(0, str(Path(__file__).parent))
from ray_cluster import LocalRay, local_ray

CLUSTER_GPUS = 2
# A job an earlier test stopped releases its GPU within seconds; minutes on a busy machine.
IDLE_DEADLINE_S = 180.0


@pytest.fixture(scope="session")
def ray_head() -> Iterator[LocalRay]:
    try:
        with local_ray(num_gpus=CLUSTER_GPUS) as ray:
            yield ray
    except RuntimeError as error:
        if "dashboard" in str(error).lower() and "missing packages" in str(error).lower():
            pytest.skip(f"the Ray dashboard cannot start here: {error}")
        raise


@pytest.fixture
def cluster(ray_head: LocalRay) -> LocalRay:
    """The shared head, once no job of an earlier test holds anything on it."""
    from ray.job_submission import JobStatus, JobSubmissionClient  # lazy: ray is heavy to import

    client = JobSubmissionClient(ray_head.dashboard)
    deadline = time.monotonic() + IDLE_DEADLINE_S
    while True:
        live = [j.submission_id for j in client.list_jobs() if not JobStatus(j.status).is_terminal()]
        usage = gpu_usage(ray_head.dashboard)
        if not live and (usage is None or usage[0] == 0):
            return ray_head
        if time.monotonic() > deadline:
            pytest.fail(
                f"an earlier test still holds the shared Ray head: jobs {live}, GPUs used/total {usage}"
            )
        time.sleep(0.3)
