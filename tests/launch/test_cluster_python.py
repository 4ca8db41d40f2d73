"""The t3rl_core stages (data, model preparation, eval and its SGLang server) run with an explicit
cluster-side interpreter: paths.cluster_python, else this machine's where they run here (the local
executor, Ray's other_stages: local) and slime's (paths.python) on the cluster; a bad value is a config
error, and so is an interpreter here that cannot import t3rl."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan
from launch.plan.stages import render_command

LOCAL = "/planning/venv/bin/python"
CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", LOCAL, "test-run", {})
T3RL_STAGES = ("data", "eval")


def interpreters(overrides: list[str]) -> dict[str, str]:
    """The interpreter that runs each t3rl_core stage's module (every such command agrees), and the
    slime stages'."""
    plan = build_plan(resolve(["+experiment=stage1_bfcl", *overrides]).run, CTX)
    out = {}
    for name in T3RL_STAGES:
        text = "\n".join(render_command(c) for c in plan.stage(name).commands)
        used = set(re.findall(r"(\S+) -m (?:t3rl_core\.\w+|sglang\.launch_server)", text))
        assert len(used) == 1, (name, used)
        out[name] = used.pop()
    out["to_torch_dist"] = plan.stage("to_torch_dist").commands[1][0]
    out["train"] = plan.stage("train").slime_job.python
    return out


def test_local_executor_runs_them_with_this_machines_interpreter() -> None:
    used = interpreters([])
    assert [used[s] for s in T3RL_STAGES] == [LOCAL, LOCAL]
    assert used["train"] == used["to_torch_dist"] == "python3"  # slime's, paths.python


def test_stages_ray_runs_here_use_this_machines_interpreter() -> None:
    # Ray's other_stages: local runs data and eval on this machine (slime's python3 may lack t3rl).
    used = interpreters(["executor=ray"])
    assert [used[s] for s in T3RL_STAGES] == [LOCAL, LOCAL]
    assert used["train"] == "python3"


@pytest.mark.parametrize("executor", ["slurm", "ray"])
def test_cluster_executors_never_use_the_planning_machines_interpreter(executor: str) -> None:
    other = ["executor.other_stages=ray"] if executor == "ray" else []
    used = interpreters([f"executor={executor}", *other])
    assert LOCAL not in used.values()
    assert [used[s] for s in T3RL_STAGES] == ["python3", "python3"]
    explicit = interpreters([f"executor={executor}", *other, "paths.cluster_python=/opt/t3rl/bin/python"])
    assert [explicit[s] for s in T3RL_STAGES] == ["/opt/t3rl/bin/python"] * 2
    assert explicit["train"] == "python3"


def test_local_executor_takes_an_existing_interpreter() -> None:
    used = interpreters([f"paths.cluster_python={sys.executable}"])
    assert used["data"] == sys.executable


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("venv/bin/python", "relative"),
        ("'python3 -u'", "not an interpreter path"),
        ("/nonexistent/bin/python", "not an executable on this machine"),
    ],
)
def test_a_bad_cluster_python_is_a_config_error(value: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(["+experiment=stage1_bfcl", f"paths.cluster_python={value}"])
    problem = next(p for p in caught.value.problems if p.key == "paths.cluster_python")
    assert words in problem.message and problem.fix
