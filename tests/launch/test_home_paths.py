"""`~` in any config value is the user's home, expanded once where the config is resolved (and where a
runtime YAML is read): every reader of a path — the tokenizer loader, the eval engine, a stage's
command, the run and plan dirs — gets an absolute one. `t3rl eval +experiment=quickstart` with
T3RL_CACHE_DIR unset could not load its tokenizer from '~/.cache/t3rl/models/tiny_qwen3'."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli.app import app
from t3rl_core.config import RuntimeConfig


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own and no T3RL_CACHE_DIR: paths.cache_dir is its default, `~/.cache/t3rl`."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("T3RL_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _strings(node: object):
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str):
        yield node


def test_every_path_of_a_resolved_config_is_expanded(home: Path) -> None:
    run = resolve(["+experiment=quickstart"]).run
    assert run.paths.cache_dir == f"{home}/.cache/t3rl"
    assert run.model.chat.tokenizer == f"{home}/.cache/t3rl/models/tiny_qwen3"  # interpolated from it
    resolved = resolve(["+experiment=quickstart", "paths.runs_dir='~/my-runs'", "model.hf_checkpoint='~/m'"])
    run = resolved.run
    assert (run.paths.runs_dir, run.model.hf_checkpoint, run.model.chat.tokenizer) == (
        f"{home}/my-runs",
        f"{home}/m",
        f"{home}/m",
    )
    assert not [s for s in _strings(resolved.config) if s == "~" or s.startswith("~/")]


def test_a_runtime_yaml_with_a_tilde_is_expanded(home: Path, tmp_path: Path) -> None:
    runtime = {
        "env": {"name": "bfcl_multi_turn"},
        "reward": {"name": "progress"},
        "chat": {"tokenizer": "~/tok"},
        "parsers": {"tool_call_parser": "qwen25"},
    }
    (tmp_path / "runtime.yaml").write_text(yaml.safe_dump({"t3rl": runtime}))
    assert RuntimeConfig.from_yaml(tmp_path / "runtime.yaml").chat.tokenizer == f"{home}/tok"


def test_eval_gets_its_tokenizer_under_the_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {}

    def evaluate(runtime, config, data, out, **kwargs):
        seen["tokenizer"] = runtime.chat.tokenizer
        return {"complete": True}

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", evaluate)
    # The stand-in evaluate reads no tokenizer: the synthetic model need not be built first.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", lambda runtime, data_dir, split: data_dir)
    result = CliRunner().invoke(
        app, ["eval", "+experiment=quickstart", "--engine", "reference", "--out", "out"]
    )
    assert result.exit_code == 0, result.output
    assert seen["tokenizer"] == f"{home}/.cache/t3rl/models/tiny_qwen3"


def test_plan_commands_and_dirs_carry_no_tilde(home: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", "+experiment=quickstart", "paths.plans_dir='~/plans'"])
    assert result.exit_code == 0, result.output
    (plan_sh,) = (home / "plans").rglob("plan.sh")
    assert "~/" not in plan_sh.read_text() and f"{home}/.cache/t3rl" in plan_sh.read_text()
