"""A plugin whose constructor raises is refused by `t3rl validate` and `plan` (built once at
pre-flight), not found by a stage after the data and model stages ran."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app

SANDBOX = '''
from t3rl_core.sandbox.base import Sandbox, SandboxResult
from t3rl_core.sandbox.config import SandboxConfig


class PickyConfig(SandboxConfig):
    name: str = "picky"
    endpoint: str = ""


class PickySandbox(Sandbox):
    Config = PickyConfig
    closed = 0

    def __init__(self, config: PickyConfig) -> None:
        if not config.endpoint:
            raise ValueError("PickySandbox needs an endpoint")

    async def run(self, code: str) -> SandboxResult:
        return SandboxResult("success", code, "", 0, 0.0)

    async def aclose(self) -> None:
        type(self).closed += 1
'''


@pytest.fixture
def picky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A config dir whose sandbox option `picky` names the plugin (a module of its own per test)."""
    module = f"picky_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(SANDBOX)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    group = tmp_path / "conf" / "sandbox"
    group.mkdir(parents=True)
    (group / "picky.yaml").write_text(f"# @package env.sandbox\nname: {module}:PickySandbox\n")
    return ["--config-dir", str(tmp_path / "conf"), "+experiment=retool", "sandbox=picky"]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    return result.exit_code, result.output


def test_a_constructor_that_raises_fails_validate_and_plan(picky: list[str], tmp_path: Path) -> None:
    for command in ("validate", "plan"):
        code, out = _run(command, *picky)
        assert code == 2, out
        assert "error env.sandbox.name" in out and "PickySandbox needs an endpoint" in out
    assert not (tmp_path / "plans").exists() and not (tmp_path / "runs").exists()


def test_a_plugin_that_constructs_is_built_and_closed(picky: list[str], tmp_path: Path) -> None:
    _, out = _run("validate", *picky, "+env.sandbox.endpoint=x")
    assert "PickySandbox" not in out, out
    module = sys.modules[f"picky_{tmp_path.name.replace('-', '_')}"]
    assert module.PickySandbox.closed == 1
