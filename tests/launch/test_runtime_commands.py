"""`t3rl data` and `t3rl eval` (in process, through the Typer app)."""

import json

import pytest
import typer
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.eval_setup import with_options
from t3rl_core.eval.config import EvalConfig
from tests.support.tiny_stack import free_port, shared_tiny_stack, write_runtime_yaml

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
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"]["tasks"] == 4 and summary["complete"] is True
    assert "status: episodes completed/truncated/aborted/failed/parse_error" in result.output
    assert "4/0/0/0/0" in result.output  # the overall row's status column
    # A standalone eval dir is a record like a pipeline run's.
    config = yaml.safe_load((out / "config.yaml").read_text())
    assert config["model"]["hf_checkpoint"] == str(model) and config["eval"]["engine"]["name"] == "reference"
    assert yaml.safe_load((out / "overrides.yaml").read_text()) == overrides
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["overrides"] == overrides and "sha" in manifest["git"]


def test_eval_against_a_dead_url_exits_1_naming_it(tmp_path):
    from t3rl_core.chat.tiny import shared_tokenizer_dir

    data, _ = shared_tiny_stack()
    runtime = write_runtime_yaml(tmp_path / "runtime.yaml", shared_tokenizer_dir("qwen3"))
    out = tmp_path / "out"
    url = f"http://127.0.0.1:{free_port()}"
    args = ["eval", "--runtime-config", str(runtime), "--engine", "sglang", "--url", url]
    result = runner.invoke(app, [*args, "--data", str(data), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert f"SGLang server {url} is not answering GET /health" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and url in summary["reason"]
    assert {"config.yaml", "overrides.yaml", "manifest.json", "report.md"} <= {p.name for p in out.iterdir()}


@pytest.mark.parametrize("where", ["--url", "eval.engine.url"])
def test_a_password_in_the_eval_url_is_refused_either_way_and_never_shown(tmp_path, where):
    """`--url` and `eval.engine.url=` agree: a URL carrying a password is refused before anything is
    written (the credential goes by reference, eval.engine.api_key=env:NAME), whatever else is set."""
    url = f"http://evaluser:planted-url-pass-71@127.0.0.1:{free_port()}"
    given = ["--url", url] if where == "--url" else [f"eval.engine.url={url}"]
    api_key = "eval.engine.api_key=env:SGLANG_API_KEY"
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["eval", "--engine", "sglang", api_key, *given, "--out", str(out)],
        env={"COLUMNS": "300", "SGLANG_API_KEY": "key-of-the-test"},  # the reference resolves here
    )
    assert result.exit_code == 2, result.output
    assert "is embedded in this URL" in result.output  # a password (or any credential)
    assert "not answering" not in result.output and "planted-url-pass-71" not in result.output
    assert not out.exists()


def test_eval_config_errors_exit_2(tmp_path):
    result = runner.invoke(app, ["eval", "model=no_such_model", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_data_bfcl(tmp_path):
    result = runner.invoke(app, ["data", "bfcl", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert sum(1 for _ in (tmp_path / "bfcl_test.jsonl").open()) == 300


def test_a_dead_url_fails_before_the_data_is_prepared(tmp_path, monkeypatch):
    # No synthetic model is built in this session's cache (the check has its own test): the eval's own
    # refusal is what is checked.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    out = tmp_path / "out"
    url = f"http://127.0.0.1:{free_port()}"
    args = ["eval", "+experiment=quickstart", "--engine", "sglang", "--url", url, "--out", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert f"SGLang server {url} is not answering GET /health" in result.output
    assert not (out / "data").exists()  # nothing prepared for an eval that cannot run
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and url in summary["reason"]
    assert (out / "manifest.json").exists() and (out / "config.yaml").exists()
