"""A real single-node Ray cluster on 127.0.0.1 for tests (CPU only; one declared GPU resource).

`ray start --head --block` runs in its own session; teardown ends exactly the processes of that
session (by pid), never other Ray processes on the machine.

`python tests/scaleout/ray_cluster.py [SECONDS]` starts a head and prints the CPU time its processes
used to start and then while idle for SECONDS (default 60), what tests/scaleout/conftest.py weighs.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class LocalRay:
    dashboard: str
    gcs: str
    log: Path
    session: int  # the session id of its processes (that of `ray start`)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _session_pids(sid: int) -> list[int]:
    import psutil

    pids = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid:
                pids.append(proc.pid)
        except (ProcessLookupError, PermissionError):
            continue
    return pids


def _end_session(sid: int) -> None:

    # `ray start --block` drains for 30 s on SIGTERM; the daemons end at once, so a short grace suffices.
    for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        for pid in _session_pids(sid):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not [p for p in _session_pids(sid) if _running(p)]:
                return
            time.sleep(0.1)


def _running(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for_gpu_node(dashboard: str, num_gpus: int, deadline: float) -> None:
    from ray.util.state import list_nodes

    while True:
        nodes = list_nodes(address=dashboard, filters=[("state", "=", "ALIVE")], detail=True)
        if sum(n.resources_total.get("GPU", 0) for n in nodes) >= num_gpus:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"no node with {num_gpus} GPU(s) registered: {nodes}")
        time.sleep(0.3)


def _wait_for_job_agent(dashboard: str, deadline: float) -> None:
    """Until a job can be submitted: a head's job agent starts after its dashboard and node answer (a
    minute later on a busy machine), and submissions before it fail with "try again later"."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    client = JobSubmissionClient(dashboard)
    while True:
        try:
            job = client.submit_job(entrypoint="true")
            break
        except RuntimeError as error:
            if "try again later" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    while not JobStatus(client.get_job_status(job)).is_terminal():  # the tests start on an idle head
        if time.monotonic() > deadline:
            raise RuntimeError(f"the job agent's first job {job} did not end")
        time.sleep(0.3)


@contextmanager
def local_ray(num_gpus: int = 1, start_timeout_s: float = 180.0) -> Iterator[LocalRay]:
    """Start a head with the dashboard; yields its addresses once it takes jobs; ends its processes
    afterwards. Generous deadline: the head starts while the suite's other worker loads both cores."""
    ray = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if ray is None:
        raise RuntimeError("the ray CLI is not installed")
    port, dashboard_port = _free_port(), _free_port()
    # Short path: Ray's unix socket paths must stay under ~100 characters.
    temp = Path(tempfile.mkdtemp(prefix="t3rlray", dir="/tmp"))
    log = temp / "ray_start.log"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                ray, "start", "--head", "--block",
                "--node-ip-address", "127.0.0.1",
                "--port", str(port),
                "--num-cpus", "1",
                "--num-gpus", str(num_gpus),
                # Small: the tests move no data, and the machine may be busy with other suites.
                "--object-store-memory", str(100 * 1024 * 1024),
                "--include-dashboard", "true",
                "--dashboard-host", "127.0.0.1",
                "--dashboard-port", str(dashboard_port),
                # Ray's defaults are fixed ports (agent 52365, client server 10001): a second head on the
                # machine (another suite's) would start without a job agent, and every submission fail.
                "--dashboard-agent-listen-port", str(_free_port()),
                "--ray-client-server-port", str(_free_port()),
                "--disable-usage-stats",
                "--temp-dir", str(temp),
            ],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    dashboard = f"http://127.0.0.1:{dashboard_port}"
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"ray start exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{dashboard}/api/version", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(  # noqa: B904 - the last connection error says nothing new
                        f"Ray dashboard not up after {start_timeout_s}s:\n{log.read_text()[-3000:]}"
                    )
                time.sleep(0.3)
        _wait_for_gpu_node(dashboard, num_gpus, deadline)
        _wait_for_job_agent(dashboard, deadline)
        yield LocalRay(dashboard=dashboard, gcs=f"127.0.0.1:{port}", log=log, session=proc.pid)
    finally:
        _end_session(proc.pid)
        proc.wait(timeout=10)
        shutil.rmtree(temp, ignore_errors=True)


def session_cpu_s(sid: int) -> float:
    """CPU seconds (user and system, with waited-for children) of the live processes of session `sid`."""
    import psutil

    total = 0.0
    for pid in _session_pids(sid):
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def main(idle_s: float) -> None:
    with local_ray(num_gpus=2) as ray:
        started = session_cpu_s(ray.session)
        time.sleep(idle_s)  # the measurement: the head left alone for that long
        idle = session_cpu_s(ray.session) - started
    share = 100 * idle / idle_s
    print(f"start: {started:.1f} s CPU; idle for {idle_s:.0f} s: {idle:.1f} s CPU ({share:.1f} % of a core)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 60.0)
