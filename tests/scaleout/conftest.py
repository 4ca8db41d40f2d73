"""One real Ray head (127.0.0.1, CPU only, two declared GPUs) for every test that asks for `cluster`.

A head takes seconds of both cores to start, so the modules share one per test process; under
pytest-xdist they run on one worker (SAME_WORKER in tests/conftest.py), so one head starts. Each test
starts on an idle cluster: no job of an earlier test pending or running, no GPU held in the load report.

The head ends after the last test of the session that asks for it, not at the session's end: its
daemons use ~5 % of a core while idle (`tests/scaleout/ray_cluster.py`), and the worker that ran the
Ray modules first (RUN_FIRST) goes on with the rest of the suite for minutes. A test asking for it
after that starts a new one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Generator
from contextlib import ExitStack
from pathlib import Path

import pytest

from launch.run.executors.ray_capacity import gpu_usage

sys.path.insert(0, str(Path(__file__).parent))
from ray_cluster import LocalRay, local_ray

CLUSTER_GPUS = 2
# A job an earlier test stopped releases its GPU within seconds; minutes on a busy machine.
IDLE_DEADLINE_S = 180.0
FIXTURE = "cluster"


class _Head:
    """The shared head while it runs."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self.ray: LocalRay | None = None

    def start(self) -> LocalRay:
        if self.ray is None:
            try:
                self.ray = self._stack.enter_context(local_ray(num_gpus=CLUSTER_GPUS))
            except RuntimeError as error:
                if "dashboard" in str(error).lower() and "missing packages" in str(error).lower():
                    pytest.skip(f"the Ray dashboard cannot start here: {error}")
                raise
        return self.ray

    def stop(self) -> None:
        self.ray = None
        self._stack.close()


_HEAD = _Head()


@pytest.fixture
def cluster() -> LocalRay:
    """The shared head, once no job of an earlier test holds anything on it."""
    from ray.job_submission import JobStatus, JobSubmissionClient  # lazy: ray is heavy to import

    ray_head = _HEAD.start()
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    """After the test's own teardown: end the head when no later test of the session asks for it (the
    collection's order is the run's, also for the modules an xdist worker is sent)."""
    result = yield
    if _HEAD.ray is not None and item is _last_user(item.session):
        _HEAD.stop()
    return result


def _last_user(session: pytest.Session) -> pytest.Item | None:
    users = [item for item in session.items if FIXTURE in getattr(item, "fixturenames", ())]
    return users[-1] if users else None


def pytest_sessionfinish() -> None:
    _HEAD.stop()
