"""`t3rl data` and `t3rl eval` (in process, through the Typer app)."""

import json

import pytest
import typer
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runtime import with_options
from t3rl_core.eval.config import EvalConfig
from tests.support.tiny_stack import shared_tiny_stack, write_runtime_yaml

runner = CliRunner()


def test_options_replace_the_engine_and_set_k():
    base = EvalConfig.model_validate({"engine": {"name": "sglang", "url": None, "concurrency": 8}})
    config = with_options(base, engine="reference", url=None, k=None, split="bfcl_val", limit_per_category=2)
    assert config.engine.name == "reference" and config.split == "bfcl_val" and config.limit_per_category == 2
    config = with_options(base, engine=None, url="http://h:1", k=4, split=None, limit_per_category=None)
    assert config.engine.url == "http://h:1" and config.engine.concurrency == 8
    assert config.samples == 4 and config.pass_k == [1, 4] and config.temperature == 1.0
    with pytest.raises(typer.BadParameter):
        with_options(base, engine="hf", url="http://h:1", k=None, split=None, limit_per_category=None)


@pytest.mark.slow
def test_eval_from_a_runtime_yaml(tmp_path):
    data, model = shared_tiny_stack()
    runtime = write_runtime_yaml(tmp_path / "runtime.yaml", model, max_new_tokens=32768)
    out = tmp_path / "out"
    args = [
        "eval",
        "--runtime-config",
        str(runtime),
        "--engine",
        "reference",
        "--data",
        str(data),
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["engine"]["name"] == "reference" and summary["overall"]["episodes"] == 4
    assert summary["categories"]["multi_turn_base"]["accuracy"] == 1.0


@pytest.mark.slow
def test_eval_from_overrides(tmp_path):
    data, model = shared_tiny_stack()
    out = tmp_path / "out"
    overrides = ["+experiment=quickstart", f"model.hf_checkpoint={model}"]
    args = ["eval", *overrides, "--engine", "reference", "--limit-per-category", "1", "--data", str(data)]
    result = runner.invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "summary.json").read_text())["overall"]["tasks"] == 4


def test_eval_config_errors_exit_2(tmp_path):
    result = runner.invoke(app, ["eval", "model=no_such_model", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_data_bfcl(tmp_path):
    result = runner.invoke(app, ["data", "bfcl", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sum(1 for _ in (tmp_path / "bfcl_test.jsonl").open()) == 300
