"""Runs a rendered sbatch script's Ray bring-up for real, with srun/ray/scontrol replaced by recorders.

The fakes in fake_slurm/ log every call; the GPU probe succeeds only once the logged `ray start`
calls add up to the GPUs it waits for, so the order below is what the script must do on a cluster.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from launch.config.schema import SlurmExecutorConfig
from launch.run.executors.sbatch import SbatchJob, render_sbatch

FAKES = Path(__file__).parent / "fake_slurm"


def _run(
    tmp_path: Path, nodes: list[str], *, wait_s: int = 20, dead_node: str = ""
) -> tuple[int, list[str], str]:
    command = tmp_path / "command.sh"
    command.write_text("ray job submit --address=http://127.0.0.1:8265 -- python3 train.py --lr 1e-6\n")
    job = SbatchJob(
        job_name="t3rl-test-train",
        nodes=len(nodes),
        gpus_per_node=8,
        needs_ray=True,
        command_file=str(command),
        workdir=str(tmp_path),
        output=str(tmp_path / "slurm-%j.out"),
    )
    script = tmp_path / "train.sbatch"
    script.write_text(render_sbatch(job, SlurmExecutorConfig()))
    log = tmp_path / "calls.log"
    log.touch()
    env = dict(
        os.environ,
        PATH=f"{FAKES}:{os.environ['PATH']}",
        STUB_LOG=str(log),
        SLURM_JOB_NODELIST=",".join(nodes),
        T3RL_RAY_POLL_S="0.05",
        T3RL_RAY_WAIT_S=str(wait_s),
        STUB_DEAD_NODE=dead_node,
    )
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    calls = [line for line in log.read_text().splitlines() if not line.startswith("srun ")]
    return proc.returncode, calls, proc.stderr


def _index(calls: list[str], needle: str) -> int:
    matches = [i for i, call in enumerate(calls) if needle in call]
    assert matches, f"no call with {needle!r} in {calls}"
    return matches[0]


def test_two_nodes_head_workers_wait_submit_stop(tmp_path: Path) -> None:
    rc, calls, stderr = _run(tmp_path, ["node1", "node2", "node3"])
    assert rc == 0, stderr
    head = _index(calls, "ray node=node1 start --head --node-ip-address=10.0.0.1")
    head_ready = _index(calls, "want=8 ok")
    workers = [
        _index(calls, f"ray node={node} start --address=10.0.0.1:6379 --num-gpus=8")
        for node in ("node2", "node3")
    ]
    all_ready = _index(calls, "want=24 ok")
    submit = _index(calls, "ray node=node1 job submit --address=http://127.0.0.1:8265 -- python3 train.py")
    stops = [_index(calls, f"ray node={node} stop --force") for node in ("node1", "node2", "node3")]
    assert head < head_ready < min(workers)
    assert max(workers) < all_ready < submit < min(stops)
    # The probe ran on the head node, against the head's GCS address.
    assert "probe node=node1" in calls[head_ready]
    assert sum("job submit" in call for call in calls) == 1


def test_single_node_runs_no_worker(tmp_path: Path) -> None:
    rc, calls, stderr = _run(tmp_path, ["node1"])
    assert rc == 0, stderr
    assert not [call for call in calls if "start --address" in call]
    assert _index(calls, "start --head") < _index(calls, "job submit") < _index(calls, "stop --force")


def test_gpus_never_registered_fails_without_submitting_and_still_stops(tmp_path: Path) -> None:
    rc, calls, stderr = _run(tmp_path, ["node1", "node2"], wait_s=1, dead_node="node2")
    assert rc != 0
    assert "Ray has fewer than 16 GPUs after 1s" in stderr
    assert _index(calls, "want=8 ok") < _index(calls, "want=16 wait")
    assert not [call for call in calls if "job submit" in call]
    assert _index(calls, "ray node=node1 stop --force") > _index(calls, "want=16 wait")
    assert _index(calls, "ray node=node2 stop --force") > _index(calls, "want=16 wait")
