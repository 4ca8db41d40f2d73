"""What executor=ray submits for real plans (1 and 2 nodes) and its cluster-size check (no cluster needed)."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.config.schema import RayExecutorConfig
from launch.plan.build import PlanContext, build_plan
from launch.run.executors.ray_jobs import RayExecutor, check_cluster, dashboard_address


def _train(hardware: str):
    resolved = resolve(
        [
            "+experiment=stage1_bfcl",
            f"hardware={hardware}",
            "executor=ray",
            "executor.address=http://head:8265",
        ]
    )
    run_dir = Path("/shared/runs/stage1_bfcl/20260101-000000")
    context = PlanContext(
        run_dir, Path("/shared"), "/shared/t3rl", sys.executable, "stage1_bfcl/20260101-000000"
    )
    return build_plan(resolved.run, context).stage("train")


@pytest.mark.parametrize(("hardware", "nodes"), [("h200x8", 1), ("h200x8x2nodes", 2)])
def test_train_job_is_slimes_entrypoint_with_its_runtime_env(hardware: str, nodes: int) -> None:
    stage = _train(hardware)
    spec = RayExecutor(RayExecutorConfig(address="http://head:8265", working_dir="/shared/work")).job_spec(
        stage
    )
    argv = shlex.split(spec.entrypoint)
    assert argv[:2] == ["python3", "/root/slime/train.py"]
    assert argv[argv.index("--actor-num-nodes") + 1] == str(nodes)
    assert argv[argv.index("--actor-num-gpus-per-node") + 1] == "8"
    assert argv[argv.index("--rollout-num-gpus") + 1] == str(8 * nodes)  # colocated: the whole cluster
    env = spec.runtime_env["env_vars"]
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"  # TP 2 on Hopper
    assert "/shared/t3rl" in env["PYTHONPATH"]
    assert spec.runtime_env["working_dir"] == "/shared/work"
    assert (stage.gpus, stage.nodes) == (8 * nodes, nodes)


def _nodes(*gpus: float):
    return lambda **_: [
        SimpleNamespace(resources_total={"CPU": 64.0, "GPU": g} if g else {"CPU": 8.0}) for g in gpus
    ]


def test_cluster_check_counts_gpus_and_gpu_nodes() -> None:
    check_cluster("http://head:8265", 16, 2, list_nodes=_nodes(8, 8, 0))
    with pytest.raises(
        ConfigError, match=r"has 8 GPU\(s\) on 1 GPU node\(s\) \(2 live node\(s\)\); this stage needs 16"
    ):
        check_cluster("http://head:8265", 16, 2, list_nodes=_nodes(8, 0))
    # Enough GPUs in total, but slime's 2-node layout needs two GPU nodes.
    with pytest.raises(ConfigError, match=r"needs 16 GPU\(s\) on 2 node\(s\)"):
        check_cluster("http://head:8265", 16, 2, list_nodes=_nodes(16))
    check_cluster("http://head:8265", 0, 1, list_nodes=_nodes())  # CPU stages need nothing


def test_address_comes_from_config_or_ray_address() -> None:
    assert dashboard_address(RayExecutorConfig(address="http://head:8265"), environ={}) == "http://head:8265"
    with pytest.raises(ValueError, match="scheme"):  # the schema wants the URL whole (issue 9)
        RayExecutorConfig(address="head:8265")
    assert dashboard_address(RayExecutorConfig(), environ={"RAY_ADDRESS": "head:8265"}) == "http://head:8265"
    assert dashboard_address(RayExecutorConfig(), environ={"RAY_ADDRESS": "http://h:1"}) == "http://h:1"
    with pytest.raises(
        ConfigError, match=re.escape("executor.address=http://<head>:8265 or export RAY_ADDRESS")
    ):
        dashboard_address(RayExecutorConfig(), environ={})
