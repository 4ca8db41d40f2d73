"""CLI conventions a researcher expects: --version, shell completion, `~` in --config-dir, Hydra's own
settings rejected with the t3rl equivalent, overrides and --config-dir on `data bfcl` and `eval`,
`eval --stage`, and Ctrl-C printing the resume command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli.app import app
from launch.cli.eval_setup import stage_eval_config
from tests.support.gated_python import gated_python, preparing

EXPERIMENT = """\
# @package _global_
# A one-stage CPU experiment for these tests: BFCL data preparation only.
defaults:
  - override /executor: local
  - override /tracking: none
  - _self_
name: conventions
stages:
  prepare_data:
    kind: prepare_data
"""


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home dir holding ~/myconf/experiment/conventions.yaml; runs go under the tmp dir."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))  # data really prepared: Ctrl-C has time
    monkeypatch.chdir(tmp_path)
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR"):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "home" / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "conventions.yaml").write_text(EXPERIMENT)
    return tmp_path / "home"


def test_version_and_completion_options() -> None:
    from importlib.metadata import version

    result = invoke("--version")
    assert result.exit_code == 0 and result.output.strip() == f"t3rl {version('t3rl')}"
    help_text = invoke("--help").output
    assert "--install-completion" in help_text and "--show-completion" in help_text


def test_config_dir_with_a_tilde_is_expanded_and_recorded_absolute(home: Path, tmp_path: Path) -> None:
    assert invoke("validate", "--config-dir=~/myconf", "+experiment=conventions").exit_code == 0
    result = invoke("plan", "--config-dir=~/myconf", "+experiment=conventions")
    assert result.exit_code == 0, result.output
    (manifest,) = tmp_path.rglob("conventions/*/manifest.json")  # under the plans dir
    assert json.loads(manifest.read_text())["config_dirs"] == [str(home / "myconf")]
    shown = invoke("show", "--config-dir=~/myconf", "+experiment=conventions", "--explain", "name")
    assert shown.exit_code == 0 and "conventions" in shown.output


@pytest.mark.parametrize(
    ("override", "fix"),
    [
        ("hydra.run.dir=/tmp/out", "paths.runs_dir=<dir>"),
        ("hydra.sweep.dir=/tmp/out", "t3rl run --run-dir <sweep dir>"),
        ("hydra.job.chdir=true", "drop it"),
        ("hydra.job.name=x", "name=<run name>"),
        ("hydra/job_logging=disabled", "drop it"),
        ("hydra.verbose=true", "drop it"),
    ],
)
def test_hydra_settings_are_rejected_with_the_t3rl_equivalent(
    tmp_path: Path, override: str, fix: str
) -> None:
    result = invoke("plan", "+experiment=quickstart", override, env={"T3RL_RUNS_DIR": str(tmp_path)})
    assert result.exit_code == 2
    assert f"override `{override}`" in result.output and "fix: " in result.output and fix in result.output
    assert not list(tmp_path.iterdir())  # a rejected command writes nothing


def test_data_bfcl_takes_overrides_and_config_dirs(home: Path, tmp_path: Path) -> None:
    env_dir = home / "myconf" / "env"
    env_dir.mkdir()
    (env_dir / "tiny_bfcl.yaml").write_text(
        "# A small BFCL split for the test.\n"
        "defaults:\n  - bfcl_multi_turn  # t3rl's BFCL env\n  - _self_\n"
        "data:  # one category only\n  categories: [multi_turn_base]  # the base category\n"
    )
    out = tmp_path / "data"
    result = invoke(
        "data", "bfcl", "env=tiny_bfcl", "env.data.seed=7", "--config-dir", "~/myconf", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["env_config"]["data"]["seed"] == 7
    assert manifest["env_config"]["data"]["categories"] == ["multi_turn_base"]
    assert manifest["splits"]["bfcl_all"]["rows"] == 200
    wrong = invoke("data", "bfcl", "env=tau2", "eval.split=tau2_test", "--out", str(tmp_path / "x"))
    assert wrong.exit_code == 2 and "env=bfcl_multi_turn" in wrong.output
    assert not (tmp_path / "x").exists()


def test_eval_stage_uses_that_stages_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = resolve(["+experiment=quickstart"]).run
    tiny = stage_eval_config(run, "eval_tiny")
    assert (tiny.limit_per_category, tiny.max_new_tokens, tiny.engine.name) == (1, 16, "hf")
    assert run.eval.limit_per_category != 1  # the root eval section is not the stage's

    seen = {}

    def fake_evaluate(runtime, config, data, out, **kwargs):
        seen["config"] = config
        return {"complete": True}

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", fake_evaluate)
    # The stand-in evaluate reads no tokenizer: the synthetic model need not be built first.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    data = tmp_path / "bfcl_test.jsonl"
    metadata = {"index": "multi_turn_base_0", "data_source": "multi_turn_base"}
    data.write_text(json.dumps({"prompt": [{"role": "user", "content": "x"}], "metadata": metadata}) + "\n")
    result = invoke(
        "eval", "+experiment=quickstart", "--stage", "eval_reference", "--data", str(data),
        "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen["config"].limit_per_category == 5 and seen["config"].engine.name == "reference"
    bad = invoke("eval", "+experiment=quickstart", "--stage", "prepare_data", "--data", str(data))
    assert bad.exit_code == 2 and "eval stages: eval_reference, eval_tiny" in bad.output


@pytest.mark.slow
def test_ctrl_c_prints_the_resume_command(home: Path, tmp_path: Path) -> None:
    # The data preparation blocks until stopped: Ctrl-C lands while the stage runs, however slow the
    # machine (it came 0.3 s after the stage's log appeared, and a preparation of a second or two could
    # end first on a busy machine: exit 0, not 130).
    python = gated_python(tmp_path / "interpreter")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "launch", "run", "--config-dir", str(home / "myconf"),
         "+experiment=conventions", f"paths.cluster_python={python}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 120  # a failure guard: an interpreter, the checks, the stage's start
    try:
        # The preparation runs, and the launcher recorded the stage's process group (it stops it).
        while not (preparing(python.parent) and _handle(tmp_path / "runs", "prepare_data")):
            assert time.monotonic() < deadline and launcher.poll() is None
            time.sleep(0.05)
        launcher.send_signal(signal.SIGINT)
        output, _ = launcher.communicate(timeout=60)
    finally:
        launcher.kill()
    (run_dir,) = (tmp_path / "runs" / "conventions").iterdir()
    assert launcher.returncode == 130, output
    assert f"resume with: t3rl run --run-dir {run_dir}" in output


def _handle(runs: Path, stage: str) -> dict:
    """The recorded handle of `stage` in the one run under `runs` ({} before there is one)."""
    for state in runs.glob("*/*/state.json"):
        return json.loads(state.read_text())["stages"].get(stage, {}).get("handle") or {}
    return {}


def test_no_gc_freeze_once_nanobind_modules_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """gc.freeze() keeps nanobind instances alive to the end, so nanobind reports them as leaked."""
    import gc

    import launch.cli as cli

    frozen: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(sys, "argv", ["t3rl", "--version"])
    for name in cli.NANOBIND_USERS:
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(SystemExit):
        cli.main()
    assert frozen == [True]  # a light command: frozen, its exit is faster
    monkeypatch.setitem(sys.modules, "xgrammar", object())
    with pytest.raises(SystemExit):
        cli.main()
    assert frozen == [True]  # xgrammar loaded: not frozen
