"""A command is judged by the directory it writes: a resume (`t3rl run --run-dir R`) writes into R,
`t3rl plan --out DIR` into DIR, and `t3rl plan --run-dir R` nowhere, so none of them is refused over
paths.runs_dir or paths.plans_dir, which they do not read; a resume of a run dir this user cannot write
is refused before anything is written, with the copy that can be resumed instead (found by a newcomer
hunt: the fix proposed was another paths.runs_dir, which a resume never reads)."""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
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
    assert "would refuse" not in out, out  # the copy is writable: a resume of it would go ahead


def test_a_plan_written_to_out_is_not_refused_over_plans_dir(copied_run: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "my-plan"
    code, out = _invoke("plan", "+experiment=rec", "--config-dir", "conf", "--out", str(out_dir))
    assert code == 0 and "error paths." not in out, out
    assert (out_dir / "plan.sh").is_file()


def test_an_eval_written_to_out_is_not_judged_by_runs_dir(copied_run: Path, tmp_path: Path) -> None:
    """`t3rl eval --out DIR` writes DIR (probed by its option's callback), not under paths.runs_dir."""
    from launch.cli.eval_setup import resolve_or_exit

    assert resolve_or_exit(["+experiment=rec"], ["conf"], tmp_path / "ev").run.name == "rec"
    with pytest.raises(typer.Exit) as refused:  # its default dir is under paths.runs_dir: judged
        resolve_or_exit(["+experiment=rec"], ["conf"])
    assert refused.value.exit_code == 2


def test_data_written_to_out_is_not_judged_by_runs_dir(
    copied_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl data bfcl --out DIR` writes DIR alone (the preparation itself is not what is tested)."""
    monkeypatch.setattr("launch.cli.runtime.prepare_and_show", lambda env, out: 0)
    code, out = _invoke("data", "bfcl", "--out", str(tmp_path / "bfcl"))
    assert code == 0 and "error paths." not in out, out


def test_a_sweep_point_resumed_is_not_judged_by_runs_dir(copied_run: Path) -> None:
    """`t3rl run --run-dir <sweep dir>` composes each point as a resume of it, into its own run dir:
    was 'its config cannot be composed here: paths.runs_dir …' for every point."""
    from launch.output import console
    from launch.run.point_stale import composed_point
    from launch.run.rundir import RunDir

    resolved, _ = composed_point(RunDir(copied_run), [str(Path("conf").resolve())], console())
    assert resolved.run.name == "rec"


def test_a_new_run_is_still_judged_by_its_runs_dir(copied_run: Path) -> None:
    """The config's dirs are skipped only when the command line names the record's dir."""
    code, out = _invoke("run", "+experiment=rec", "--config-dir", "conf")
    assert code == 2 and "error paths.runs_dir" in out and REFUSED_RUNS in out, out


# Run as nobody (tests.sandbox.test_sandbox_non_root.as_nobody: a private /tmp, HOME=/tmp, in /): a run
# dir of its own made read-only (0555 stops its owner when not root), resumed.
AS_NOBODY = textwrap.dedent(
    """
    import contextlib, io, json, os
    from launch.cli.run_command import run_command

    run = "/tmp/runs/rec/20260101-000000"
    os.makedirs(run)
    with open(run + "/config.yaml", "w") as f:
        f.write("name: rec\\n")
    os.chmod(run, 0o555)
    listing = lambda: sorted((p, os.stat(os.path.join(run, p)).st_mtime_ns) for p in [".", *os.listdir(run)])
    before, in_tmp = listing(), set(os.listdir("/tmp"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = run_command([], False, run, None, None, [], dry=False)
    print(json.dumps({"code": code, "err": " ".join(err.getvalue().split()), "same": listing() == before,
                      "new_in_tmp": sorted(set(os.listdir("/tmp")) - in_tmp)}))
    """
)


def test_a_run_dir_this_user_cannot_write_is_refused_with_the_copy_to_resume() -> None:
    from tests.sandbox.test_sandbox_non_root import as_nobody  # skips where this host cannot

    done = as_nobody(AS_NOBODY, 120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    run, copy = "/tmp/runs/rec/20260101-000000", "/tmp/t3rl-runs/rec/20260101-000000"
    assert report["code"] == 1, report  # launch/cli/exit_help.py: run's 1, the run dir cannot be used
    assert f"{run} is not writable by this user" in report["err"], report
    assert f"mkdir -p /tmp/t3rl-runs/rec && cp -a {run} {copy} && t3rl run --run-dir {copy}" in report["err"]
    assert "paths.runs_dir=" not in report["err"] and "point paths.runs_dir" not in report["err"], report
    # no lock, no record, no copy made (the private /tmp also shows the paths it keeps: a clone under /tmp)
    assert report["same"] and report["new_in_tmp"] == [], report


def test_the_copy_suggested_is_a_fresh_dir_of_this_user(made_run: tuple[Path, Path]) -> None:
    """Beside the user's own runs when the working dir can hold them, named as the run."""
    from launch.run.single import _copy_destination

    root, run = made_run
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root / "conf")
        assert _copy_destination(run) == root / "conf" / "runs" / "rec" / run.name
        patch.chdir(root)  # ./runs/rec/<time> is the run itself: never its own copy
        assert _copy_destination(run).parts[-2:] == ("rec", run.name)
        assert _copy_destination(run) != run
