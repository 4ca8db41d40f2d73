"""A credential given as a literal override is stored masked (`key=***`); resuming the run dir must
never compose the mask as the credential: it is refused until the value is given again (and stays
masked on disk), while a `${oc.env:NAME}` reference resumes as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config import secrets
from tests.support.retool_prepare_only import EXPERIMENT
from tests.support.retool_prepare_only import tree_snapshot as snapshot

LITERAL = "hf_literal_planted_5e1a"
REGIVEN = "hf_regiven_planted_77c2"
BY_REFERENCE = "planted-by-reference-9d0"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "WANDB_API_KEY", "HF_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PLANTED_PLAIN_VAR", BY_REFERENCE)  # a name that does not look secret
    monkeypatch.setattr(secrets, "_REMEMBERED", set())
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "rec.yaml").write_text(EXPERIMENT)
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"}, catch_exceptions=False)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def started(workdir: Path, *overrides: str) -> Path:
    code, out = invoke("run", "+experiment=rec", "--config-dir", str(workdir / "conf"), *overrides)
    assert code == 0, out
    (run_dir,) = (workdir / "runs" / "rec").iterdir()
    return run_dir


def leaks(root: Path) -> list[str]:
    return [
        f"{path}: {value}"
        for path in root.rglob("*")
        if path.is_file()
        for value in (LITERAL, REGIVEN, BY_REFERENCE)
        if value.encode() in path.read_bytes()
    ]


def test_a_masked_literal_is_refused_on_resume_until_given_again_and_stays_masked(workdir: Path) -> None:
    run_dir = started(workdir, f"++hardware.env_vars.HF_TOKEN={LITERAL}")
    assert "++hardware.env_vars.HF_TOKEN=***" in yaml.safe_load((run_dir / "overrides.yaml").read_text())
    before = snapshot(run_dir)
    for command in ("run", "plan"):
        code, out = invoke(command, "--run-dir", str(run_dir), "env.data.seed=9")
        assert code == 2, out
        assert "hardware.env_vars.HF_TOKEN" in out and "stores masked" in out
        # The fix: the same command with the key given again, or a reference.
        assert f"t3rl {command} --run-dir {run_dir} ++hardware.env_vars.HF_TOKEN=VALUE" in out
        assert "${oc.env:NAME}" in out
        assert snapshot(run_dir) == before  # refused before anything was written
    # Given again (without the stored `++`: the merge keeps it): accepted, and still masked on disk.
    code, out = invoke("plan", "--run-dir", str(run_dir), f"hardware.env_vars.HF_TOKEN={REGIVEN}")
    assert code == 0, out
    assert snapshot(run_dir) == before
    code, out = invoke("run", "--run-dir", str(run_dir), f"hardware.env_vars.HF_TOKEN={REGIVEN}")
    assert code == 0, out
    assert yaml.safe_load((run_dir / "overrides.yaml").read_text()) == [
        "+experiment=rec",
        "++hardware.env_vars.HF_TOKEN=***",
    ]
    history = yaml.safe_load((run_dir / "overrides.history.yaml").read_text())
    assert history[-1]["given"] == ["hardware.env_vars.HF_TOKEN=***"]
    assert leaks(workdir) == [] and REGIVEN not in out and LITERAL not in out


def test_a_credential_by_reference_resumes_without_being_given_again(workdir: Path) -> None:
    run_dir = started(workdir, "++hardware.env_vars.MY_SERVICE_SECRET=${oc.env:PLANTED_PLAIN_VAR}")
    code, out = invoke("plan", "--run-dir", str(run_dir))
    assert code == 0, out
    code, out = invoke("run", "--run-dir", str(run_dir))
    assert code == 0, out
    assert "++hardware.env_vars.MY_SERVICE_SECRET=${oc.env:PLANTED_PLAIN_VAR}" in yaml.safe_load(
        (run_dir / "overrides.yaml").read_text()
    )
    assert leaks(workdir) == []


def test_a_sweep_point_holding_a_masked_literal_is_refused_with_how_to_resume_it(workdir: Path) -> None:
    code, out = invoke(
        "run", "-m", "+experiment=rec", "--config-dir", "conf", "env.data.seed=1,2",
        f"++hardware.env_vars.HF_TOKEN={LITERAL}",
    )  # fmt: skip
    assert code == 0, out
    (sweep,) = (workdir / "runs" / "rec").iterdir()
    point = sorted(p for p in sweep.iterdir() if p.is_dir())[0]
    before = snapshot(sweep)
    code, out = invoke("run", "--run-dir", str(sweep), "--from", "prepare_data")  # every point again
    assert code == 2, out
    assert snapshot(sweep) == before
    assert f"t3rl run --run-dir {point}" in out and "hardware.env_vars.HF_TOKEN" in out
    assert leaks(workdir) == []


def test_a_parallel_sweep_refuses_a_literal_its_point_launchers_could_not_read(workdir: Path) -> None:
    """Points run in parallel each start as `t3rl run --run-dir <point>`, from the masked overrides.yaml."""
    args = ("run", "-m", "+experiment=rec", "--config-dir", "conf", "env.data.seed=1,2")
    code, out = invoke(*args, "executor.max_parallel=2", f"++hardware.env_vars.HF_TOKEN={LITERAL}")
    assert code == 2, out
    assert "hardware.env_vars.HF_TOKEN" in out and "${oc.env:NAME}" in out and "max_parallel=1" in out
    assert not (workdir / "runs").exists() and leaks(workdir) == []
    # By reference, the same parallel sweep runs.
    code, out = invoke(
        *args, "executor.max_parallel=2", "++hardware.env_vars.HF_TOKEN=${oc.env:PLANTED_PLAIN_VAR}"
    )
    assert code == 0, out
    assert leaks(workdir) == []
