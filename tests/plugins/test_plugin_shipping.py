"""How plugin code reaches the jobs that import it: the runtime YAML names the plugin, the Ray job's
runtime_env carries its package (py_modules, or executor.working_dir when the package lies inside it),
an installed distribution is named with its version; `t3rl plan` with a plugin imports nothing heavy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.config.schema import RayExecutorConfig
from launch.plan.build import PlanContext, build_plan
from launch.plan.plugin_shipping import shipments
from launch.run.executors.ray_jobs import RayExecutor
from t3rl_core.config import RuntimeConfig
from tests.support.plugin_example import EXAMPLE, EXAMPLE_CONF, REPO

HEAVY = ("torch", "transformers", "ray", "sglang", "wandb", "bfcl_eval")


def plan(*overrides: str):
    run = resolve(["+experiment=counter_grpo", *overrides], [str(EXAMPLE_CONF)]).run
    run_dir = Path("/shared/runs/counter_grpo/20260101-000000")
    context = PlanContext(run_dir, Path("/shared"), "/shared/t3rl", sys.executable, "counter_grpo/1")
    return run, build_plan(run, context)


def test_the_ray_sdk_submission_carries_the_plugin_package(example_on_path):
    _, built = plan("executor=ray", "executor.address=http://head:8265")
    train = built.stage("train")
    spec = RayExecutor(RayExecutorConfig(address="http://head:8265")).job_spec(train)
    assert spec.runtime_env["py_modules"] == [str(EXAMPLE / "t3rl_counter")]
    # The hook paths stay t3rl's; the runtime YAML slime reads names the plugin.
    assert "t3rl_core.hooks.slime.generate" in spec.entrypoint
    runtime = RuntimeConfig.model_validate(
        yaml.safe_load(built.files[train.outputs["runtime_config"]])["t3rl"]
    )
    assert runtime.env.name == "t3rl_counter.world:CounterWorld" and runtime.env.tasks == 8
    assert train.imports is not None and set(train.imports.modules) == {
        "t3rl_counter.world",
        "t3rl_counter.reward",
    }


def test_a_package_inside_the_working_dir_travels_with_it(example_on_path):
    _, built = plan("executor=ray", "executor.address=http://head:8265", f"executor.working_dir={EXAMPLE}")
    train = built.stage("train")
    assert "py_modules" not in train.slime_job.runtime_env()
    assert any("inside executor.working_dir" in note for note in train.notes)


def test_an_installed_distribution_is_named_with_its_version():
    run = resolve(["reward=progress"]).run
    assert shipments({"env": run.env, "reward": run.reward}) == []  # built-ins ship with t3rl
    from launch.plan import plugin_shipping

    # pydantic as if it were a plugin package: it lives in site-packages and has a distribution.
    shipped = plugin_shipping._shipment("pydantic", [], None)
    assert shipped.how == "installed" and shipped.dist.startswith("pydantic ")
    assert "pip install pydantic==" in shipped.describe()


@pytest.mark.slow
def test_plan_with_a_plugin_imports_no_heavy_library(tmp_path):
    code = (
        "import json, sys\n"
        "from launch.cli.app import app\n"
        "try:\n"
        f"    app(['plan', '--config-dir', {str(EXAMPLE_CONF)!r}, '+experiment=counter_grpo'])\n"
        "except SystemExit as e:\n"
        "    assert e.code == 0, e.code\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(REPO)]), "T3RL_NO_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "t3rl_counter" in loaded and not loaded & set(HEAVY)


def test_a_chat_template_plugin_ships_like_an_env_plugin(example_on_path):
    _, built = plan("model=counter_chatml", "hardware=h100x1")
    train = built.stage("train")
    assert "t3rl_counter.chat" in train.imports.modules
    assert any("chat template t3rl_counter.chat:CHATML (model.chat.chat_template)" in n for n in train.notes)
