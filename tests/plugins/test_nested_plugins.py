"""Plugins of the nested sections (ReTool's sandbox, mounted at env.sandbox): validated with did-you-mean
and provenance like built-ins, built by the env at run time, shipped and pre-flight-imported."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli.app import app
from launch.plan.build import PlanContext, build_plan
from t3rl_core.registries import ACTION_PARSERS, ENVS

ECHO_SANDBOX = '''
from t3rl_core.sandbox.base import Sandbox, SandboxResult
from t3rl_core.sandbox.config import SandboxConfig


class EchoConfig(SandboxConfig):
    name: str = "echo"
    prefix: str = ">> "  # written before the cell's code


class EchoSandbox(Sandbox):
    """Runs nothing: the cell's code comes back as its output."""

    Config = EchoConfig

    def __init__(self, config: EchoConfig) -> None:
        self.config = config

    async def run(self, code: str) -> SandboxResult:
        return SandboxResult("success", self.config.prefix + code.strip(), "", 0, 0.0)

    async def aclose(self) -> None:
        pass
'''


@pytest.fixture
def conf(tmp_path, monkeypatch) -> list[str]:
    """A config dir with sandbox/echo.yaml naming the plugin module `echo_sandbox_<test>` (a module of its
    own per test: an imported module stays in sys.modules)."""
    module = f"echo_sandbox_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(ECHO_SANDBOX)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    group = tmp_path / "conf" / "sandbox"
    group.mkdir(parents=True)
    (group / "echo.yaml").write_text(
        "# @package env.sandbox\n# A sandbox plugin that echoes the code.\n"
        f"name: {module}:EchoSandbox  # by import path\nprefix: '=> '  # before each output\n"
    )
    return ["--config-dir", str(tmp_path / "conf")]


def test_a_sandbox_plugin_validates_like_a_built_in(conf):
    runner = CliRunner()
    assert runner.invoke(app, ["validate", *conf, "+experiment=retool", "sandbox=echo"]).exit_code == 0
    typo = runner.invoke(
        app, ["validate", *conf, "+experiment=retool", "sandbox=echo", "env.sandbox.prefx=x"]
    )
    assert typo.exit_code == 2 and "did you mean 'env.sandbox.prefix'?" in typo.output
    shown = runner.invoke(
        app, ["show", *conf, "+experiment=retool", "sandbox=echo", "--explain", "env.sandbox.prefix"]
    )
    assert "sandbox/echo.yaml" in shown.output


def test_the_env_builds_the_plugin_and_the_plan_ships_it(conf, tmp_path):
    run = resolve(["+experiment=retool", "sandbox=echo"], [conf[1]]).run
    factory = ENVS.build(run.env)
    env = factory({"prompt": [{"role": "user", "content": "6 * 7?"}], "label": "42"}, "eval")
    parser = ACTION_PARSERS.factory("code_block")(None, [])

    async def step() -> str:
        await env.reset()
        transition = await env.step(parser.parse("<code>\n```python\nprint(6 * 7)\n```\n</code>"))
        await factory.aclose()
        return transition.inline or ""

    output = asyncio.run(step())
    assert "=> " in output and "print(6 * 7)" in output
    context = PlanContext(tmp_path / "run", tmp_path, str(Path.cwd()), sys.executable, "retool/1")
    train = build_plan(run, context).stage("sft")
    module = run.env.sandbox.name.partition(":")[0]
    assert train.imports is not None and module in train.imports.modules
    assert train.slime_job.py_modules == (str(tmp_path / f"{module}.py"),)
