"""examples/plugin through the command line: validate, show, ls, plan and an eval with the reference
engine, with the package on PYTHONPATH only (no install, no fork of conf/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.plan.stages import ImportCheck, Stage
from launch.run.import_check import import_problems
from tests.support.plugin_example import EXAMPLE, EXAMPLE_CONF, REPO

CONF = ["--config-dir", str(EXAMPLE_CONF)]
QUITTER = """
from t3rl_core.engines.config import EngineConfig, ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine, as_model_output


class QuitterConfig(EngineConfig):
    name: str = "quitter"


class Quitter(ReferenceEngine):
    Config = QuitterConfig

    def __init__(self, config, chat=None):
        super().__init__(ReferenceEngineConfig(), chat=chat)

    async def generate(self, input_ids, sampling, context=None):
        return as_model_output(self.chat, "Done.", calls_tools=False, sampling=sampling)
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def workdir(tmp_path, monkeypatch, example_on_path):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_validate_and_show_treat_plugin_keys_as_built_in_ones(workdir):
    assert invoke("validate", *CONF, "+experiment=counter").exit_code == 0
    typo = invoke("validate", *CONF, "+experiment=counter", "reward.extra_call_penalt=0.3")
    assert typo.exit_code == 2
    assert "did you mean 'reward.extra_call_penalty'?" in typo.output
    assert "set in: override `reward.extra_call_penalt=0.3`" in typo.output
    shown = invoke("show", *CONF, "+experiment=counter", "--explain", "env.max_add")
    assert "examples/plugin/conf/env/counter.yaml" in shown.output
    default = invoke("show", *CONF, "+experiment=counter", "--explain", "reward.extra_call_penalty")
    assert "reward.extra_call_penalty = 0.1" in default.output
    tree = invoke("show", *CONF, "+experiment=counter").output  # the plugin's own fields, resolved
    assert "name: t3rl_counter.world:CounterWorld\n  tasks: 8\n  max_add: 5\n  seed: 0" in tree


def test_a_plugin_that_does_not_import_is_a_config_error_with_a_fix(workdir):
    result = invoke("validate", *CONF, "+experiment=counter", "reward.name=t3rl_countr.reward:ExactTarget")
    assert result.exit_code == 2
    assert "reward.name: reward plugin 't3rl_countr.reward:ExactTarget': cannot import" in result.output
    # The misspelt package gets the nearest import path that exists, not the list of built-ins.
    assert "fix: set reward.name=t3rl_counter.reward:ExactTarget" in result.output


def test_ls_lists_plugins_with_their_source(workdir):
    result = invoke("ls", "reward", *CONF)
    assert result.exit_code == 0
    line = next(x for x in result.output.splitlines() if "t3rl_counter.reward:ExactTarget" in x)
    assert "import path, reward=exact_target" in line and "exact_target.yaml" in line
    assert any(x.split()[:2] == ["binary", "built-in"] for x in result.output.splitlines() if x.strip())


def test_plan_ships_the_plugin_to_the_ray_job_and_its_local_stages(workdir):
    result = invoke("plan", *CONF, "+experiment=counter_grpo")
    assert result.exit_code == 0, result.output
    assert "# plugin env t3rl_counter.world:CounterWorld (env), reward" in result.output
    (plan_sh,) = workdir.rglob("plan.sh")
    script = plan_sh.read_text()
    package = str(EXAMPLE / "t3rl_counter")
    runtime_env = json.loads(
        next(x for x in script.split("'") if x.startswith("--runtime-env-json=")).split("=", 1)[1]
    )
    assert runtime_env["py_modules"] == [package]
    assert f"runtime_env py_modules {package}" in script
    assert f"export PYTHONPATH={EXAMPLE}" in script  # prepare_data runs the plugin's prepare() here


def test_pre_flight_imports_plugins_where_the_stage_runs(example_on_path):
    modules = ("t3rl_counter.world", "t3rl_counter.reward")
    here = os.pathsep.join([str(EXAMPLE), str(REPO)])
    ok = Stage("data", "prepare_data", (), imports=ImportCheck(sys.executable, here, modules))
    assert import_problems([ok]) == []
    missing = Stage("train", "train", (), imports=ImportCheck(sys.executable, str(REPO), modules))
    problems = import_problems([missing])
    assert len(problems) == 2 and all("needed by train" in p for p in problems)
    assert "No module named 't3rl_counter'" in problems[0]
    # `t3rl run` asks the executor before the first stage; the local one runs these imports.
    from launch.run.executors.local import LocalExecutor

    assert LocalExecutor().preflight([ok, missing]) == problems


@pytest.mark.slow
def test_eval_with_the_reference_engine_through_the_plugin(workdir):
    from t3rl_core.chat.tiny import shared_tokenizer_dir

    tokenizer = shared_tokenizer_dir("qwen3")
    args = [
        "eval",
        *CONF,
        "+experiment=counter",
        f"model.chat.tokenizer={tokenizer}",
        "--engine",
        "reference",
    ]
    result = invoke(*args, "--out", str(workdir / "out"))
    assert result.exit_code == 0, result.output
    summary = json.loads((workdir / "out" / "summary.json").read_text())
    assert summary["env"] == "t3rl_counter.world:CounterWorld" and summary["overall"]["tasks"] == 8
    records = [json.loads(x) for x in (workdir / "out" / "trajectories.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} == {"completed"} and {r["reward"] for r in records} == {1.0}
    # An engine plugin by import path: the gold policy that always says it is done at once.
    (workdir / "quitter.py").write_text(QUITTER)
    sys.path.insert(0, str(workdir))
    try:
        result = invoke(*args[:-1], "quitter:Quitter", "--out", str(workdir / "quit"))
    finally:
        sys.path.remove(str(workdir))
    assert result.exit_code == 0, result.output
    summary = json.loads((workdir / "quit" / "summary.json").read_text())
    assert summary["engine"]["name"] == "quitter:Quitter" and summary["overall"]["accuracy"] == 0.0
    unknown = invoke(*args[:-1], "quitter_gone:Quitter", "--out", str(workdir / "gone"))
    assert unknown.exit_code == 2 and "Invalid value for --engine" in unknown.output


@pytest.mark.slow
def test_the_cli_with_the_package_on_pythonpath_only(tmp_path):
    """What a user types: PYTHONPATH=examples/plugin t3rl plan --config-dir … (a fresh process). `plan`
    validates first, so one process covers both commands' imports of the plugin from the path alone
    (~0.6 s of CPU a process; docs/tutorials/own-world.md's runnable blocks also run `validate` so)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), str(REPO)])}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from launch.cli import main; main()",
            "plan",
            *CONF,
            "+experiment=counter_grpo",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    (plan_sh,) = tmp_path.rglob("plan.sh")  # validated, then planned
    assert "t3rl_counter.world:CounterWorld" in plan_sh.read_text()
