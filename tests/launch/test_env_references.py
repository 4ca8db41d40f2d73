"""`${oc.env:NAME}` stays a reference in every file t3rl writes, whatever the variable is called (issue
22 §2): under a job's variables (`hardware.env_vars`, a stage's hardware, set by an override or in a
config file) and under a credential key, config.yaml, manifest.json and the composition cache keep
`${oc.env:NAME}`, the Ray runtime env in plan.sh gets `${NAME}` (expanded where the job runs), a
credential field reads it as env:NAME, and `t3rl show` / `t3rl runs diff` print no value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from launch.config.env_references import job_variable
from tests.support.planted import invoke, isolate, leaks, shown

PLANTED = {
    "pat": "ghp_plantedpat00000000001",  # GITHUB_PAT, by override
    "other_pat": "ghp_plantedpat00000000002",  # GITHUB_PAT of a second plan
    "deploy": "deploy-cred-planted-77e1",  # DEPLOY_CRED, in a config file
    "stage": "stage-token-planted-5a90",  # STAGE_VALUE, a stage's own hardware.env_vars
    "server": "sk-server-planted-31c4",  # SERVER_KEY_HOLDER, given to eval.server.api_key
}
EXPERIMENT = """\
# @package _global_
defaults:
  - stage1_bfcl
  - _self_
hardware:
  env_vars:
    DEPLOY_CRED: ${oc.env:DEPLOY_CRED}
"""
OVERRIDES = (
    "+experiment=with_env",
    "++hardware.env_vars.GITHUB_PAT=${oc.env:GITHUB_PAT}",
    "++stages.train.hardware.env_vars.STAGE_VALUE=${oc.env:STAGE_VALUE}",
    "eval.server.api_key=${oc.env:SERVER_KEY_HOLDER}",
)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    environ = {
        "GITHUB_PAT": PLANTED["pat"],
        "DEPLOY_CRED": PLANTED["deploy"],
        "STAGE_VALUE": PLANTED["stage"],
        "SERVER_KEY_HOLDER": PLANTED["server"],
    }
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "with_env.yaml").write_text(EXPERIMENT)
    return isolate(tmp_path, monkeypatch, environ)


def test_an_environment_reference_stays_one_in_every_file_and_output(workdir: Path) -> None:
    code, out = invoke("plan", "--config-dir", "conf", *OVERRIDES, "--out", "p1")
    assert code == 0, out
    plan = workdir / "p1"
    config = yaml.safe_load((plan / "config.yaml").read_text())
    assert config["hardware"]["env_vars"]["GITHUB_PAT"] == "${oc.env:GITHUB_PAT}"
    assert config["hardware"]["env_vars"]["DEPLOY_CRED"] == "${oc.env:DEPLOY_CRED}"
    assert config["stages"]["train"]["hardware"]["env_vars"]["STAGE_VALUE"] == "${oc.env:STAGE_VALUE}"
    assert config["eval"]["server"]["api_key"] == "${oc.env:SERVER_KEY_HOLDER}"
    manifest = json.loads((plan / "manifest.json").read_text())
    assert "${oc.env:GITHUB_PAT}" in json.dumps(manifest)
    script = (plan / "plan.sh").read_text()
    for name in ("GITHUB_PAT", "DEPLOY_CRED", "STAGE_VALUE"):  # Ray expands them where the job runs
        assert f'"{name}": "${{{name}}}"' in script
    assert "--api-key env:SERVER_KEY_HOLDER" in script  # the server's own process reads it
    code, shown_config = invoke("show", "--config-dir", "conf", *OVERRIDES)
    assert code == 0 and "GITHUB_PAT: ${oc.env:GITHUB_PAT}" in shown_config
    assert list((workdir / "cache").rglob("*.json")), "the composition was not cached"
    assert shown(PLANTED, out + shown_config) == []
    assert leaks(PLANTED, plan, workdir / "cache") == []


def test_runs_diff_of_two_values_of_a_reference_prints_neither(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert invoke("plan", "--config-dir", "conf", *OVERRIDES, "--out", "p1")[0] == 0
    monkeypatch.setenv("GITHUB_PAT", PLANTED["other_pat"])
    assert invoke("plan", "--config-dir", "conf", *OVERRIDES, "--out", "p2")[0] == 0
    code, out = invoke("runs", "diff", "p1", "p2")
    assert code == 0 and "identical" in out, out
    assert shown(PLANTED, out) == [] and leaks(PLANTED, workdir / "p1", workdir / "p2") == []


def test_a_reference_is_not_resolved_where_the_run_is_planned(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_PAT")  # set only where the job runs
    code, out = invoke("validate", "--config-dir", "conf", *OVERRIDES)
    assert code == 0, out


@pytest.mark.parametrize(
    ("name", "value", "environ", "job"),
    [
        ("GITHUB_PAT", "${oc.env:GITHUB_PAT}", {}, "${GITHUB_PAT}"),
        ("TOKEN_ALIAS", "${oc.env:GITHUB_PAT}", {}, "${GITHUB_PAT}"),  # the variable it names
        ("PATHS", "${oc.env:HOME}/bin:${oc.env:EXTRA}", {}, "${HOME}/bin:${EXTRA}"),
        ("LEVEL", "${oc.env:LEVEL,WARN}", {}, "WARN"),  # a default, the variable unset here
        ("LEVEL", "${oc.env:LEVEL,'WARN'}", {"LEVEL": "INFO"}, "${LEVEL}"),  # set here: its own value
        ("OPENAI_APIKEY", "sk-literal-000000000000", {}, "${OPENAI_APIKEY}"),  # a literal credential
        ("NCCL_DEBUG", "WARN", {}, "WARN"),
    ],
)
def test_a_jobs_variable_never_holds_a_credential(name: str, value: str, environ: dict, job: str) -> None:
    assert job_variable(name, value, environ) == job
