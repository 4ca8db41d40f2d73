"""executor=ray pre-flight imports each train stage's plugin modules on the cluster itself (a REAL Ray
head on 127.0.0.1), with the stage's own runtime env: the example plugin imports when the job carries
it (py_modules), and is reported, naming the module, when it does not."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from launch.config.schema import RayExecutorConfig
from launch.plan.slime_args import SlimeJob
from launch.plan.stages import ImportCheck, Stage
from launch.run.executors.ray_jobs import RayExecutor
from tests.support.plugin_example import EXAMPLE, REPO

sys.path.insert(0, str(Path(__file__).parent))
from ray_cluster import LocalRay

pytestmark = pytest.mark.slow
MODULES = ("t3rl_counter.world", "t3rl_counter.reward")


def train(py_modules: tuple[str, ...]) -> Stage:
    job = SlimeJob(
        script="-c",
        argv=("print('train')",),
        env_vars={"PYTHONPATH": str(REPO)},  # t3rl_core, as a train job's PYTHONPATH names it
        address=None,
        python=sys.executable,
        py_modules=py_modules,
    )
    imports = ImportCheck(sys.executable, str(REPO), MODULES)
    return Stage("train", "train", (tuple(job.submit_argv()),), slime_job=job, imports=imports)


def test_plugin_imports_are_checked_on_the_cluster(cluster: LocalRay) -> None:
    executor = RayExecutor(RayExecutorConfig(address=cluster.dashboard), out=io.StringIO())
    assert executor.preflight([train((str(EXAMPLE / "t3rl_counter"),))]) == []
    problems = executor.preflight([train(())])
    assert sorted(p.split()[2] for p in problems) == sorted(MODULES), problems
    assert all("does not import on the Ray cluster (stage train)" in p for p in problems)
    assert all("No module named 't3rl_counter'" in p for p in problems)
