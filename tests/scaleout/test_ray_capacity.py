"""A Ray sweep's GPU capacity is the cluster's free GPUs (its load report), not its installed ones.

The dashboard is a real HTTP server on 127.0.0.1 answering `GET /api/cluster_status` with the body a
Ray 2.60 head returns (the shape was read from a live `ray start --head`; see the real-cluster test in
test_parallel_sweep_ray.py)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.config.errors import ConfigError
from launch.run.executors.ray_capacity import gpu_usage, own_live_gpus, sweep_capacity
from launch.run.executors.ray_jobs import JOB_RECORD


def _status(used: float, total: float) -> dict:
    usage = {"GPU": [used, total], "CPU": [3.0, 64.0], "node:10.0.0.1": [0.0, 1.0]}
    return {
        "result": True,
        "msg": "Got cluster status.",
        "data": {
            "autoscalingStatus": None,
            "clusterStatus": {"loadMetricsReport": {"usage": usage, "usageByNode": {"n1": usage}}},
        },
    }


@pytest.fixture
def dashboard() -> Iterator[tuple[str, dict]]:
    """A dashboard whose answer the test sets (`served["body"]`); it records the paths asked."""
    served: dict = {"body": _status(0, 8), "paths": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served["paths"].append(self.path)
            data = json.dumps(served["body"]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()


def test_gpus_held_by_other_jobs_are_not_capacity(dashboard: tuple[str, dict]) -> None:
    address, served = dashboard
    served["body"] = _status(used=6, total=8)
    assert gpu_usage(address) == (6.0, 8.0)
    capacity = sweep_capacity(address)
    assert capacity.gpus == 2
    assert "2 of 8 GPU(s) free" in capacity.note and "6 held by other jobs" in capacity.note
    assert served["paths"][-1] == "/api/cluster_status"
    served["body"] = _status(used=8, total=8)
    assert sweep_capacity(address).gpus == 0
    served["body"] = _status(used=0, total=8)
    assert sweep_capacity(address).gpus == 8


def test_gpus_the_sweeps_own_jobs_hold_count_as_its_own(dashboard: tuple[str, dict]) -> None:
    address, served = dashboard
    served["body"] = _status(used=6, total=8)  # 4 of the 6 are this sweep's re-attached points
    capacity = sweep_capacity(address, own_gpus=4)
    assert capacity.gpus == 6
    assert "2 held by other jobs" in capacity.note
    # Own jobs still pending hold nothing yet: the capacity never exceeds the cluster.
    assert sweep_capacity(address, own_gpus=8).gpus == 8


def test_no_load_report_yet_falls_back_to_the_installed_gpus(dashboard: tuple[str, dict]) -> None:
    address, served = dashboard
    served["body"] = {"result": True, "data": {"autoscalingStatus": None, "clusterStatus": None}}
    assert gpu_usage(address) is None
    capacity = sweep_capacity(address, total_gpus=lambda _: 16)
    assert capacity.gpus == 16 and "no load report" in capacity.note


def test_an_unreachable_dashboard_is_a_config_error_naming_the_address() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(ConfigError) as error:
        sweep_capacity(f"http://127.0.0.1:{port}")
    (problem,) = error.value.problems
    assert problem.key == "executor.address" and f"127.0.0.1:{port}/api/cluster_status" in problem.message


def _record(run_dir: Path, stage: str, submission_id: str) -> None:
    stage_dir = run_dir / "stages" / stage
    stage_dir.mkdir(parents=True)
    record = {"submission_id": submission_id, "attempt": 1, "address": "http://h:8265", "submitted_at": 0.0}
    (stage_dir / JOB_RECORD).write_text(json.dumps(record))


def test_own_gpus_are_those_of_points_with_a_live_job(tmp_path: Path) -> None:
    a, b, c = (tmp_path / name for name in "abc")
    _record(a, "train", "t3rl-a-train-1")
    _record(b, "train", "t3rl-b-train-1")
    c.mkdir()  # never submitted
    asked = []

    def live() -> set[str]:
        asked.append(True)
        return {"t3rl-a-train-1", "someone-elses-job"}

    assert own_live_gpus([(a, 4.0), (b, 2.0), (c, 8.0)], live) == 4.0
    # A sweep none of whose points ever submitted does not ask the cluster.
    assert own_live_gpus([(c, 8.0)], live) == 0.0
    assert len(asked) == 1
