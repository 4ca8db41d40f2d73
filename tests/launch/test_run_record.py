"""The run record (issue 8 §3, issue 14 §2): a dry command never touches it, a resume keeps its
overrides and their history, plans live apart from runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.run.override_merge import merge_overrides
from tests.support.retool_prepare_only import EXPERIMENT
from tests.support.retool_prepare_only import tree_snapshot as snapshot


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "rec.yaml").write_text(EXPERIMENT)
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def finished(workdir: Path) -> Path:
    code, out = invoke("run", "+experiment=rec", "--config-dir", str(workdir / "conf"))
    assert code == 0, out
    (run_dir,) = (workdir / "runs" / "rec").iterdir()
    return run_dir


def record(run_dir: Path, name: str) -> dict:
    return json.loads((run_dir / "state.json").read_text())["stages"][name]


def test_plan_on_a_finished_run_leaves_every_byte_unchanged_and_shows_what_would_change(finished):
    before = snapshot(finished)
    code, out = invoke("plan", "--run-dir", str(finished), "env.data.seed=9")
    assert code == 0, out
    assert snapshot(finished) == before
    assert "env.data.seed: 42 → 9" in out
    assert "run (its command, env or config changed)" in out
    assert f"nothing was written: the record of {finished} is unchanged" in out
    assert f"run it:  t3rl run --run-dir {finished} env.data.seed=9" in out
    # Without a change: every stage cached, still nothing written.
    code, out = invoke("plan", "--run-dir", str(finished))
    assert code == 0 and "cached" in out and "config: unchanged" in out, out
    assert snapshot(finished) == before


def test_plan_never_writes_into_a_run_even_with_out_and_runs_never_runs_a_plan(finished, workdir):
    before = snapshot(finished)
    code, out = invoke(
        "plan", "+experiment=rec", "--config-dir", str(workdir / "conf"), "--out", str(finished)
    )
    assert code == 1 and "holds a run's record" in out, out
    assert snapshot(finished) == before
    code, out = invoke("plan", "+experiment=rec", "--config-dir", str(workdir / "conf"), "--out", "myplan")
    assert code == 0, out
    assert json.loads((workdir / "myplan" / "manifest.json").read_text())["record"] == "plan"
    code, out = invoke("run", "--run-dir", "myplan")
    assert code == 1 and "is a plan written by `t3rl plan`, not a run" in out, out
    assert not (workdir / "myplan" / "state.json").exists()


def test_a_planned_sweep_is_not_run_in_the_plans_dir(workdir):
    code, out = invoke("plan", "-m", "+experiment=rec", "env.data.seed=1,2", "--config-dir", "conf")
    assert code == 0, out
    (sweep,) = (workdir / "plans" / "rec").iterdir()
    code, out = invoke("run", "--run-dir", str(sweep))
    assert code == 1 and "was planned by `t3rl plan -m`, not run" in out, out
    assert not list(sweep.rglob("state.json")) and not (workdir / "runs").exists()


def test_plan_of_a_missing_run_dir_creates_nothing(workdir):
    code, out = invoke("plan", "--run-dir", "runs/rec/nope", "+experiment=rec", "--config-dir", "conf")
    assert code == 1 and "not a run dir" in out, out
    assert not (workdir / "runs").exists()


def test_plans_live_apart_so_runs_lists_runs_only(finished, workdir):
    code, out = invoke("plan", "+experiment=rec", "--config-dir", str(workdir / "conf"))
    assert code == 0, out
    (plan_dir,) = (workdir / "plans" / "rec").iterdir()
    assert (plan_dir / "plan.sh").exists() and not (plan_dir / "state.json").exists()
    code, out = invoke("runs", "--runs-dir", str(workdir / "runs"))
    # One run listed, the finished one (the plan's dir may carry the same second-resolution stamp, so the
    # count is what shows the plan is not listed).
    assert code == 0 and "1 run in" in out and finished.name in out, out


def test_resume_with_an_override_keeps_the_stored_ones_and_each_attempts_history(finished, workdir):
    first = record(finished, "prepare_data")
    code, out = invoke("run", "--run-dir", str(finished), "env.data.seed=9")
    assert code == 0, out
    stored = yaml.safe_load((finished / "overrides.yaml").read_text())
    assert stored == ["+experiment=rec", "env.data.seed=9"]
    assert yaml.safe_load((finished / "config.yaml").read_text())["env"]["data"]["seed"] == 9
    # The changed stage ran again; the config dir came from the record.
    assert record(finished, "prepare_data")["run_id"] != first["run_id"]
    # Given again with another value: replaced in place, never listed twice.
    code, out = invoke("run", "--run-dir", str(finished), "env.data.seed=10")
    assert code == 0, out
    assert yaml.safe_load((finished / "overrides.yaml").read_text()) == [
        "+experiment=rec",
        "env.data.seed=10",
    ]
    history = yaml.safe_load((finished / "overrides.history.yaml").read_text())
    assert [(h["attempt"], h["given"], h["overrides"]) for h in history] == [
        (1, ["+experiment=rec"], ["+experiment=rec"]),
        (2, ["env.data.seed=9"], ["+experiment=rec", "env.data.seed=9"]),
        (3, ["env.data.seed=10"], ["+experiment=rec", "env.data.seed=10"]),
    ]
    manifest = json.loads((finished / "manifest.json").read_text())
    assert manifest["record"] == "run" and manifest["attempt"] == 3
    assert manifest["overrides"] == ["+experiment=rec", "env.data.seed=10"]
    code, out = invoke("runs", "show", str(finished))
    assert code == 0 and "env.data.seed=9" in out and "attempts" in out, out


def test_a_refused_resume_leaves_the_record_as_it_was(finished):
    import fcntl

    before = snapshot(finished)
    with (finished / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # another t3rl process is running this dir
        code, out = invoke("run", "--run-dir", str(finished), "env.data.seed=9")
    assert code == 1 and "in use by another t3rl process" in out, out
    # Not a byte nor an mtime changes, the lock file's included (trying a lock does not rewrite it).
    assert snapshot(finished) == before


def test_a_new_run_refused_before_its_first_stage_leaves_no_run_dir(workdir, monkeypatch):
    monkeypatch.setenv("SLIME_ROOT", str(workdir / "no-slime"))
    code, out = invoke("run", "+experiment=stage1_bfcl", "executor=local")
    assert code == 1 and "this machine cannot run the plan" in out, out
    assert not (workdir / "runs" / "stage1_bfcl").exists()  # not even an empty runs/<name>/ (issue 9)


def test_a_run_recorded_before_histories_starts_its_history_with_its_stored_overrides(finished):
    (finished / "overrides.history.yaml").unlink()
    code, out = invoke("run", "--run-dir", str(finished))
    assert code == 0, out
    history = yaml.safe_load((finished / "overrides.history.yaml").read_text())
    assert [(h["attempt"], h["given"]) for h in history] == [(1, ["+experiment=rec"]), (2, [])]


@pytest.mark.parametrize(
    ("stored", "given", "merged"),
    [
        (["+experiment=a", "lr=1"], ["lr=2"], ["+experiment=a", "lr=2"]),
        (["+experiment=a"], ["+experiment=a", "x=1"], ["+experiment=a", "x=1"]),
        (["+experiment=a"], ["experiment=b"], ["+experiment=b"]),
        (["+experiment=a", "+extra.k=1"], ["~extra.k"], ["+experiment=a"]),
        (["+experiment=a"], ["~model.bias"], ["+experiment=a", "~model.bias"]),
        (["a=1", "b=2", "a=3"], ["a=4"], ["a=4", "b=2"]),
        (["reward=progress"], ["++reward=binary"], ["++reward=binary"]),
    ],
)
def test_merge_overrides(stored, given, merged):
    assert merge_overrides(stored, given) == merged


def test_no_stray_files_outside_the_run_and_plan_dirs(finished, workdir):
    code, out = invoke("plan", "--run-dir", str(finished))
    assert code == 0, out
    assert sorted(os.listdir(workdir)) == ["conf", "runs"]


def test_runs_show_names_a_finished_stage_whose_output_was_damaged(finished):
    (finished / "stages" / "prepare_data" / "data" / "manifest.json").write_text("{}")
    code, out = invoke("runs", "show", str(finished))
    assert code == 0, out
    assert "≠ damaged" in out
    assert "stages/prepare_data/data/manifest.json changed since the stage finished" in out


def test_garbage_in_a_shared_prepared_copy_is_caught_on_resume_and_the_copy_prepared_again(workdir):
    cache = workdir / "data-cache"
    code, out = invoke("run", "+experiment=rec", "--config-dir", "conf", f"paths.cache_dir={cache}")
    assert code == 0, out
    (run_dir,) = (workdir / "runs" / "rec").iterdir()
    split = (run_dir / "stages" / "prepare_data" / "data" / "retool_test.jsonl").resolve()
    assert split.is_relative_to(cache)
    good = split.read_bytes()
    split.write_bytes(good + b"garbage\n")
    code, out = invoke("run", "--run-dir", str(run_dir))
    assert code == 0, out
    assert (
        "output damaged: stages/prepare_data/data/retool_test.jsonl changed since the stage finished "
        "(content differs)" in out
    )
    # The shared copy failed its check against its manifest and was prepared again, not relinked.
    assert split.read_bytes() == good
    assert (
        "retool_test.jsonl: its sha256 differs from the one manifest.json records"
        in (run_dir / "stages" / "prepare_data" / "log.txt").read_text()
    )


def test_data_check_names_each_problem_of_a_prepared_dir(tmp_path):
    from t3rl_core.data.check import main, problems

    (tmp_path / "a.jsonl").write_text('{"prompt": [{"role": "user"}]}\n')
    (tmp_path / "b.jsonl").write_text('{"prompt": [{"role": "user"}]}\n')
    from t3rl_core.data import describe_file

    splits = {name: describe_file(tmp_path / f"{name}.jsonl") for name in ("a", "b")}
    (tmp_path / "manifest.json").write_text(json.dumps({"splits": splits}))
    assert problems(tmp_path) == [] and main([str(tmp_path)]) == 0
    (tmp_path / "a.jsonl").write_text("garbage\n")
    (tmp_path / "b.jsonl").unlink()
    assert problems(tmp_path) == [
        f"{tmp_path}/a.jsonl: its sha256 differs from the one manifest.json records",
        f"{tmp_path}/b.jsonl: missing",
    ]
    (tmp_path / "manifest.json").write_text("{")
    assert problems(tmp_path)[0].startswith(f"{tmp_path}/manifest.json: not a readable data manifest")
    assert main([str(tmp_path / "nowhere")]) == 1
