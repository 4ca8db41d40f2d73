"""Secrets planted through every path a user has (environment, literal overrides, `${oc.env:…}`, keys
under `secrets`, URL passwords, secret flags in extra_args, a literal given to a credential field)
never reach the run dir, the composition cache, or any command's output."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config import secrets

PLANTED = {
    "env": "hf_planted_env_4b1c9e",  # HF_TOKEN in the environment
    "literal": "planted-literal-7d21",  # an override of a secret-named job variable
    "oc_env": "planted-ocenv-55e0",  # read by ${oc.env:…} into a secret-named key
    "under_secrets": "planted-under-secrets-0a9",  # any key under `secrets`
    "url": "planted-url-pass-31c",  # https://user:<this>@host
    "flag": "planted-flag-value-8f2",  # extra_args: --api-key <this>
    "field": "planted-field-literal-66",  # a literal given to a credential (Secret) field
    "reference": "planted-by-reference-19",  # the value behind eval.engine.api_key=env:SGLANG_API_KEY
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_TOKEN", PLANTED["env"])
    monkeypatch.setenv("PLANTED_PLAIN_VAR", PLANTED["oc_env"])  # a name that does not look secret
    monkeypatch.setenv("SGLANG_API_KEY", PLANTED["reference"])
    monkeypatch.setenv("T3RL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    # Nothing remembered by earlier tests in this process may do the masking for this one.
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _leaks(root: Path) -> list[str]:
    return [
        f"{path}: {name}"
        for path in root.rglob("*")
        if path.is_file()
        for name, value in PLANTED.items()
        if value.encode() in path.read_bytes()
    ]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    output = result.output + (result.stderr if result.stderr_bytes else "")
    assert not [name for name, value in PLANTED.items() if value in output], output
    return result.exit_code, output


ACCEPTED = (
    "+experiment=stage1_bfcl",
    f"++hardware.env_vars.HF_TOKEN={PLANTED['literal']}",
    "++hardware.env_vars.MY_SERVICE_SECRET=${oc.env:PLANTED_PLAIN_VAR}",
    "eval.engine.url=http://127.0.0.1:30000",
    "eval.engine.api_key=env:SGLANG_API_KEY",
)


def test_a_planned_run_and_show_keep_every_secret_out(workdir: Path) -> None:
    code, _ = _run("plan", *ACCEPTED)
    assert code == 0
    (run_dir,) = (workdir / "plans" / "stage1_bfcl").iterdir()
    for name in ("config.yaml", "overrides.yaml", "manifest.json", "plan.sh"):
        assert (run_dir / name).is_file()
    assert list((run_dir / "runtime").glob("*.yaml")), "the planted run wrote no runtime YAML"
    # The reference stays: it is where the key lives, not the key.
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["eval"]["engine"]["api_key"] == "env:SGLANG_API_KEY"
    assert config["hardware"]["env_vars"]["HF_TOKEN"] == secrets.MASK
    overrides = yaml.safe_load((run_dir / "overrides.yaml").read_text())
    assert "++hardware.env_vars.HF_TOKEN=***" in overrides
    assert "eval.engine.api_key=env:SGLANG_API_KEY" in overrides
    for key in ("hardware.env_vars.HF_TOKEN", "hardware.env_vars.MY_SERVICE_SECRET", "eval.engine.api_key"):
        code, out = _run("show", *ACCEPTED, "--explain", key)
        assert code == 0 and f"{key} =" in out
    code, out = _run("show", *ACCEPTED)
    assert code == 0 and "MY_SERVICE_SECRET: ${oc.env:PLANTED_PLAIN_VAR}" in out  # a reference stays one
    code, _ = _run("show", "+experiment=stage1_bfcl", f"++secrets.database={PLANTED['under_secrets']}")
    assert code == 2  # not a known key, but shown (masked) and reported without the value
    assert _leaks(workdir) == []


@pytest.mark.parametrize(
    ("override", "key"),
    [
        (f"eval.engine.url=https://alice:{PLANTED['url']}@gpu-host:30000", "eval.engine.url"),
        (f"eval.server.extra_args=[--api-key,{PLANTED['flag']}]", "eval.server.extra_args.0"),
        (f"eval.server.extra_args=['--token={PLANTED['flag']}']", "eval.server.extra_args.0"),
        (f"eval.server.extra_args=[--token={PLANTED['flag']}]", "eval.server.extra_args"),  # unparsable
        (f"eval.engine.api_key={PLANTED['field']}", "eval.engine.api_key"),
        (f"env.user.api_key={PLANTED['field']}", "env.user.api_key"),
    ],
)
def test_a_credential_in_the_config_is_refused_without_being_repeated(
    workdir: Path, override: str, key: str
) -> None:
    base = ["env=tau2", "eval.split=tau2_test", "user_sim=llm"] if key.startswith("env.user") else []
    for command in ("validate", "plan", "show"):
        code, out = _run(command, "+experiment=stage1_bfcl", *base, override)
        assert code == 2, out
        # The fix names the reference (an override Hydra cannot parse gets its grammar fix instead).
        assert key in out and ("env:NAME" in out or "cannot parse override" in out)
    assert not (workdir / "runs").exists() and not (workdir / "plans").exists()  # nothing written
    assert _leaks(workdir) == []


def test_the_cache_keeps_no_value_of_a_variable_it_reads(workdir: Path) -> None:
    override = "++hardware.env_vars.PLAIN=${oc.env:PLANTED_PLAIN_VAR}"  # not a secret key: cached
    code, _ = _run("validate", "+experiment=stage1_bfcl", override)
    assert code == 0
    entries = list((workdir / "cache").rglob("*.json"))
    assert entries, "the composition was not cached"
    assert not [e for e in entries if PLANTED["oc_env"].encode() in e.read_bytes()]  # a job's variable: kept


@pytest.mark.parametrize(
    ("flag", "secret"),
    [
        ("--api-key", True), ("--admin-api-key", True), ("--token=x", True), ("--hf-token", True),
        ("--password", True), ("--fim-pad-token", False), ("--eos-token", False),
        ("--rollout-stop-token-ids", False), ("--tp", False),
    ],
)  # fmt: skip
def test_secret_flags_are_credentials_not_vocabulary_tokens(flag: str, secret: bool) -> None:
    assert secrets.is_secret_flag(flag) is secret


@pytest.mark.parametrize(
    ("key", "value", "secret"),
    [
        ("model.eos_token", "<|im_end|>", False), ("pad_token", "</s>", False),
        ("tokenizer.mask_token", "[MASK]", False), ("model.chat.think_token", "<think>", False),
        ("hf_token", "hf_abcdef123456", True), ("token", "sk-live-0123456789", True),
        ("auth_token", "<not-a-vocabulary-token-but-angle bracketed>", True),
        ("secrets.eos_token", "<|im_end|>", True), ("eval.api_key", "<|im_end|>", True),
    ],
)  # fmt: skip
def test_a_special_token_under_a_token_named_key_is_not_a_credential(
    key: str, value: str, secret: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    parent, _, last = key.rpartition(".")
    data: dict = {last: value}
    for part in reversed([p for p in parent.split(".") if p]):
        data = {part: data}
    assert (value in secrets.secrets_in(data)) is secret
    assert (secrets.mask_override(f"{key}={value}") == f"{key}=***") is secret
    secrets.remember_config(data)
    secrets.remember_overrides([f"{key}={value}"])
    assert ("***" in secrets.scrub_text(f"template ends with {value}")) is secret


def test_a_yaml_file_that_held_a_secret_is_still_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launch.run.rundir import RunDir

    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    secrets.remember(["s3cr3t-value-42"])
    run = RunDir(tmp_path / "run")
    run.path.mkdir(parents=True)
    run.write_files({"runtime/env.yaml": "end_of_turn: s3cr3t-value-42\nother: [a, s3cr3t-value-42]\n"})
    text = (run.path / "runtime/env.yaml").read_text()
    assert "s3cr3t-value-42" not in text
    assert yaml.safe_load(text) == {"end_of_turn": "***", "other": ["a", "***"]}


def test_the_eval_servers_key_is_planned_by_reference_never_by_value(workdir: Path) -> None:
    """eval.server.api_key: the server's argv reads the key where the stage runs; no file holds it."""
    code, out = _run("plan", "+experiment=stage1_bfcl", "eval.server.api_key=env:SGLANG_API_KEY")
    assert code == 0, out
    (run_dir,) = (workdir / "plans" / "stage1_bfcl").iterdir()
    for script in (run_dir / "plan.sh", run_dir / "stages" / "eval" / "command.sh"):
        text = script.read_text()
        # The server's own process reads the key (and masks it in its output, SGLang logs its arguments).
        launch = ("-m t3rl_core.secret_launch", "--api-key env:SGLANG_API_KEY", "-- -m sglang.launch_server")
        assert " \\\n    ".join(launch) in text
        # An unset or empty variable stops the script before the server starts without a key.
        assert ': "${SGLANG_API_KEY:?eval.server.api_key (env:SGLANG_API_KEY)' in text
    key_file = workdir / "sglang.key"
    key_file.write_text(PLANTED["reference"])
    code, out = _run("plan", "+experiment=stage1_bfcl", f"eval.server.api_key=file:{key_file}", "--out", "p2")
    assert code == 0, out
    assert f"--api-key file:{key_file}" in (workdir / "p2" / "plan.sh").read_text()
    code, out = _run(
        "plan", "+experiment=stage1_bfcl", f"eval.server.api_key={PLANTED['field']}", "--out", "p3"
    )
    assert code == 2 and "eval.server.api_key" in out and "env:NAME" in out, out
    assert not (workdir / "p3").exists()
    assert [leak for leak in _leaks(workdir) if "sglang.key" not in leak] == []


def test_a_local_eval_stage_needs_its_servers_key_set_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from launch.plan.build import build_plan
    from launch.run.executors.local import LocalExecutor
    from tests.launch.run_configs import make_run
    from tests.launch.test_plan import CTX, full_stages

    server = {"api_key": "env:T3RL_TEST_SERVER_KEY"}
    stages = full_stages(eval={"engine": {"name": "sglang"}, "server": server})
    stage = build_plan(make_run(stages=stages), CTX).stage("eval")
    executor = LocalExecutor.__new__(LocalExecutor)
    monkeypatch.delenv("T3RL_TEST_SERVER_KEY", raising=False)
    missing = [line for line in executor.preflight([stage]) if "T3RL_TEST_SERVER_KEY" in line]
    assert missing == [
        "environment variable T3RL_TEST_SERVER_KEY is not set (needed by eval): "
        "eval.server.api_key=env:T3RL_TEST_SERVER_KEY, the key of its SGLang server: export it"
    ]
    monkeypatch.setenv("T3RL_TEST_SERVER_KEY", PLANTED["reference"])
    assert not [line for line in executor.preflight([stage]) if "T3RL_TEST_SERVER_KEY" in line]
