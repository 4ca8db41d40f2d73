"""Credentials that reached places they should not, fifth round (docs/how-to/secrets.md, "Where a secret
could leave"): the fallback of `${oc.env:NAME,fallback}` under a credential's name (a value, not where one
lives) in config.yaml, manifest.json, overrides.yaml, provenance.json, the composition cache and every
printed command; `t3rl score`'s verdicts.jsonl and summary.json, written as the scorers returned them
(an error quoting the line). Each with its unmasked neighbour: what is not a credential stays visible.

Each test plants its own value: values this process has masked once stay masked, so a value shared
between tests could pass a test that no longer masks it.
"""

from __future__ import annotations

import base64
import io
import json
import string
import sys
from pathlib import Path

import pytest
import yaml

from launch.config.schema import LocalExecutorConfig, TrackingConfig
from launch.plan.build import Plan
from launch.plan.stages import Stage
from launch.plan.tracking import open_tracker
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import run_pipeline
from launch.run.rundir import RunDir
from t3rl_core.secret import mask_text
from tests.support.cli_app import invoke
from tests.support.draws import SeededDraws
from tests.support.no_slime import cli_workdir

ALPHABET = string.ascii_letters + string.digits
random_source = SeededDraws(__name__)  # the same values every run: tests/support/draws.py


def planted(prefix: str = "") -> str:
    """A random value of no known form (or after an issuer's `prefix`), never seen by this process."""
    return prefix + "".join(random_source.choice(ALPHABET) for _ in range(24))


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    return cli_workdir(tmp_path / "work", monkeypatch)


def files_holding(value: str, *roots: Path) -> list[Path]:
    return [
        p for root in roots for p in root.rglob("*") if p.is_file() and value in p.read_text(errors="replace")
    ]


# ------------------------------------------------- the fallback of an environment reference


@pytest.mark.parametrize("key", ["++hardware.env_vars.MY_PASSWORD", "++hardware.env_vars.SERVICE_API_KEY"])
def test_the_fallback_of_a_credentials_reference_is_masked_the_reference_kept(here: Path, key: str) -> None:
    """`'++hardware.env_vars.MY_PASSWORD=${oc.env:MY_PASSWORD,<value>}'`: the reference was kept as text
    everywhere, its fallback (the password itself) with it; the cache stored the composition."""
    value = planted()
    override = f"{key}=${{oc.env:T3RL_TEST_UNSET_VARIABLE,{value}}}"
    result = invoke(["plan", "+experiment=quickstart", override, "--out", "p"])
    assert result.exit_code == 0, result.output
    assert value not in result.output and "${oc.env:T3RL_TEST_UNSET_VARIABLE,***}" in result.output
    assert files_holding(value, here, here.parent / "cache") == []
    config = (here / "p" / "config.yaml").read_text()
    assert "${oc.env:T3RL_TEST_UNSET_VARIABLE,***}" in config, config
    shown = invoke(["show", "+experiment=quickstart", override, "--explain", key.lstrip("+")]).output
    assert value not in shown and "written as: ${oc.env:T3RL_TEST_UNSET_VARIABLE,***}" in shown, shown


def test_the_fallback_in_a_config_file_is_masked(here: Path) -> None:
    value = planted()
    (here / "mine" / "experiment").mkdir(parents=True)
    (here / "mine" / "experiment" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - quickstart\nhardware:\n  env_vars:\n"
        f"    DB_PASSWORD: ${{oc.env:T3RL_TEST_UNSET_VARIABLE,{value}}}\n"
    )
    result = invoke(["plan", "--config-dir", "mine", "+experiment=mine", "--out", "p"])
    assert result.exit_code == 0, result.output
    assert value not in result.output and files_holding(value, here / "p", here.parent / "cache") == []


def test_a_fallback_that_is_no_credential_stays_visible(here: Path) -> None:
    """The near misses: a fallback under a plain name, and `paths.runs_dir`'s own `${oc.env:…,runs}`."""
    value = planted()
    override = f"++hardware.env_vars.MODEL_OPTS=${{oc.env:T3RL_TEST_UNSET_VARIABLE,{value}}}"
    result = invoke(["plan", "+experiment=quickstart", override, "--out", "p"])
    assert result.exit_code == 0, result.output
    assert value in (here / "p" / "config.yaml").read_text()
    assert "runs_dir: runs" in invoke(["show", "+experiment=quickstart"]).output


# ------------------------------------------------- t3rl score's records


def test_score_records_mask_a_credential_a_line_holds(here: Path) -> None:
    """A line's id quoted in its error: verdicts.jsonl held the token (stderr, scrubbed, did not)."""
    token = planted("sk-proj-")
    near = "multi_turn_base_99999"  # an unknown id of no credential's form, quoted the same way
    lines = [
        {"id": token, "decoded": []},
        {"id": near, "decoded": []},
        {"id": "multi_turn_base_1", "decoded": []},
    ]
    (here / "r.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = invoke(["score", "bfcl", "r.jsonl", "--no-progress"])
    assert result.exit_code == 1, result.output
    out = here / "r.scored"
    assert token not in result.output and files_holding(token[:20], out) == []
    verdicts = (here / "r.scored" / "verdicts.jsonl").read_text()
    assert f"'{near}'" in verdicts and "'***'" in verdicts, verdicts


# ------------------------------------------------- the launcher's wandb run


def test_the_wandb_run_records_no_command_line(
    here: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wandb.init recorded sys.argv as typed (`++hardware.env_vars.DB_PASS=<value>`, which the run's own
    files mask) in the run's metadata, synced with it, and pip's package list beside it."""
    value, near = planted(), planted()
    monkeypatch.setattr(
        sys, "argv", ["t3rl", "run", "+experiment=quickstart", f"++hardware.env_vars.DB_PASS={value}"]
    )
    monkeypatch.setenv("WANDB_SILENT", "true")
    tracker = open_tracker(
        TrackingConfig(kind="wandb", mode="offline"),
        experiment="quickstart",
        run_id="quickstart-1",
        run_dir=tmp_path / "run",
        config={"name": near, "hardware": {"env_vars": {"DB_PASS": value}}},
        manifest={},
    )
    assert tracker is not None
    tracker.finish("succeeded")
    written = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert written and not any(value.encode() in p.read_bytes() for p in written)
    assert not any(p.name == "requirements.txt" for p in written)
    assert any(near.encode() in p.read_bytes() for p in written)  # the config is there, masked


# ------------------------------------------------- a private key in PEM, under any name


def pem(kind: str = "PRIVATE KEY") -> str:
    body = base64.b64encode(random_source.token_bytes(144)).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"]) + "\n"


@pytest.mark.parametrize("kind", ["PRIVATE KEY", "RSA PRIVATE KEY", "OPENSSH PRIVATE KEY"])
def test_a_private_key_under_a_plain_name_is_masked_in_every_file(here: Path, kind: str) -> None:
    """A service account's key in a job variable named SA_JSON: no name or prefix gave it away, so
    config.yaml, manifest.json, plan.sh and `t3rl show` held it whole."""
    key, public = pem(kind), pem("PUBLIC KEY")
    body = key.splitlines()[1]
    (here / "mine" / "experiment").mkdir(parents=True)
    (here / "mine" / "experiment" / "mine.yaml").write_text(
        yaml.safe_dump(
            {"defaults": ["quickstart"], "hardware": {"env_vars": {"SA_JSON": key, "SA_PUBLIC": public}}}
        ).replace("defaults:", "# @package _global_\ndefaults:", 1)
    )
    argv = ["--config-dir", "mine", "+experiment=mine"]
    result = invoke(["plan", *argv, "--out", "p"])
    assert result.exit_code == 0, result.output
    assert body not in result.output and files_holding(body, here / "p", here.parent / "cache") == []
    assert body not in invoke(["show", *argv]).output
    assert "SA_JSON: '***'" in (here / "p" / "config.yaml").read_text()
    assert "warning hardware.env_vars.SA_JSON: looks like a credential" in result.output, result.output
    assert files_holding(public.splitlines()[1], here / "p")  # a public key is no credential


def test_a_private_key_in_an_eval_record_line_is_masked() -> None:
    """What an episode or a child's error quotes, JSON-escaped on one line, as t3rl_core's records are."""
    key = pem("EC PRIVATE KEY")
    line = json.dumps({"tool_output": f"cat id_ecdsa\n{key}", "id": "multi_turn_base_1"})
    masked = mask_text(line)
    assert all(part not in masked for part in key.splitlines()[1:-1]), masked
    assert "multi_turn_base_1" in masked and "-----BEGIN EC PRIVATE KEY-----***" in masked


def test_a_private_key_a_stage_prints_over_lines_is_masked_in_its_log(tmp_path: Path) -> None:
    """The tee masks line by line: the BEGIN line's rest was masked, every line of the body went to
    log.txt and the terminal as printed."""
    key, public = pem("RSA PRIVATE KEY"), pem("PUBLIC KEY")
    (tmp_path / "id_rsa").write_text(key)
    (tmp_path / "id_rsa.pub").write_text(public)
    (tmp_path / "ray").write_text("#!/usr/bin/env bash\n")  # the executor's own Ray head: not started here
    (tmp_path / "ray").chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    script = f"cat {tmp_path / 'id_rsa'}; echo after the key; cat {tmp_path / 'id_rsa.pub'}"
    plan = Plan("t", run_dir, (Stage("s", "prepare_data", (script,)),))
    out = io.StringIO()
    executor = LocalExecutor(LocalExecutorConfig(), out=out, ray_bin=str(tmp_path / "ray"))
    assert run_pipeline(plan, RunDir(run_dir), executor).status == "succeeded"
    log = (run_dir / "stages" / "s" / "log.txt").read_text()
    for shown in (log, out.getvalue()):
        assert not any(line in shown for line in key.splitlines()[1:-1]), shown
        assert "after the key" in shown and public.splitlines()[1] in shown, shown
        assert "-----END RSA PRIVATE KEY-----" in shown
