"""A command is judged by the directory it writes: a resume (`t3rl run --run-dir R`) writes into R,
`t3rl plan --out DIR` into DIR, and `t3rl plan --run-dir R` nowhere, so none of them is refused over
paths.runs_dir or paths.plans_dir, which they do not read; a resume of a run dir this user cannot write
is refused before anything is written, with the copy that can be resumed instead (found by a newcomer
hunt: the fix proposed was another paths.runs_dir, which a resume never reads)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.retool_prepare_only import EXPERIMENT

# Directories the kernel refuses to anyone, root included (the write probe makes one in each).
REFUSED_RUNS, REFUSED_PLANS = "/proc/t3rl-no-runs", "/proc/t3rl-no-plans"


@pytest.fixture(scope="module")
def made_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the working dir, one finished run of the one-stage `rec` experiment made there)."""
    root = tmp_path_factory.mktemp("record_dir")
    with pytest.MonkeyPatch.context() as patch:
        _isolated(patch, root)
        (root / "conf" / "experiment").mkdir(parents=True)
        (root / "conf" / "experiment" / "rec.yaml").write_text(EXPERIMENT)
        done = CliRunner().invoke(app, ["run", "+experiment=rec", "--config-dir", str(root / "conf")])
        assert done.exit_code == 0, done.output
        (run,) = (root / "runs" / "rec").iterdir()
        yield root, run


def _isolated(patch: pytest.MonkeyPatch, root: Path) -> None:
    patch.chdir(root)
    patch.setenv("T3RL_CACHE_DIR", str(root / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "T3RL_CHECKPOINTS_DIR", "WANDB_API_KEY"):
        patch.delenv(name, raising=False)


@pytest.fixture
def copied_run(made_run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the run elsewhere (each test changes its record), the config's runs and plans dirs
    refused by the kernel."""
    root, run = made_run
    _isolated(monkeypatch, root)
    copy = tmp_path / "elsewhere" / run.name
    shutil.copytree(run, copy, symlinks=True)
    monkeypatch.setenv("T3RL_RUNS_DIR", REFUSED_RUNS)
    monkeypatch.setenv("T3RL_PLANS_DIR", REFUSED_PLANS)
    return copy


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})
    return result.exit_code, result.output


def test_a_resume_is_not_refused_over_a_runs_dir_it_does_not_write(copied_run: Path) -> None:
    code, out = _invoke("run", "--run-dir", str(copied_run))
    assert code == 0 and "error paths." not in out, out
    assert f"done: {copied_run}" in " ".join(out.split()), out


def test_a_preview_of_a_resume_is_not_refused_over_the_config_s_dirs(copied_run: Path) -> None:
    code, out = _invoke("plan", "--run-dir", str(copied_run))
    assert code == 0 and "error paths." not in out, out


def test_a_plan_written_to_out_is_not_refused_over_plans_dir(copied_run: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "my-plan"
    code, out = _invoke("plan", "+experiment=rec", "--config-dir", "conf", "--out", str(out_dir))
    assert code == 0 and "error paths." not in out, out
    assert (out_dir / "plan.sh").is_file()


def test_a_new_run_is_still_judged_by_its_runs_dir(copied_run: Path) -> None:
    """The config's dirs are skipped only when the command line names the record's dir."""
    code, out = _invoke("run", "+experiment=rec", "--config-dir", "conf")
    assert code == 2 and "error paths.runs_dir" in out and REFUSED_RUNS in out, out
