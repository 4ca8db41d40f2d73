"""Launcher kinds of round nine, each a record that disagreed with itself or with what ran:

- a sweep whose `sweep-<stamp>` dir existed (another sweep of that second) got a `-1` dir while its
  points' tracking names and its sweep.json still said `sweep-<stamp>`: one name, the dir's.
- a run dir moved or copied elsewhere: every stage's fingerprint held the old absolute paths, so a resume
  there reran (and superseded) every stage, a train stage's checkpoint included; the run took a new id
  (its tracker's run name); and the outputs' digests were keyed by the old paths, so a damaged output of
  the copy was only checked to exist (`t3rl runs show` checked the original's files instead).
  Fingerprints count paths below the run dir relative to it, state.json names the dir it was written
  in and its digests are read below the dir it is in now, and a recorded dir keeps its manifest's id.
- a stage killed by a signal (the out-of-memory killer's SIGKILL) was recorded as `exit code 137; see
  <log>`: every failed local exit is now described by launch.run.exit_meaning (the signal, its usual
  cause) with the last lines its attempt printed, in the record sweeps and `runs show` read.
- a resume after t3rl's code changed (another commit) kept the stages done before, while the manifest,
  rewritten per attempt, said the whole run came from the new commit and nothing said otherwise. Each
  stage's record keeps the code it ran with (`code`: the manifest's git state of its attempt), and a
  resume (or `t3rl plan --run-dir`) names the stages kept from other code and the `--from` that reruns
  them.
- a parallel sweep's point times were measured on the wall clock: set back while a point ran (NTP, a VM
  resumed), its time showed negative. Durations are on `launch.run.parallel.clock` (monotonic).
- a declared output directory with a symlinked subdirectory (shards linked from other storage): its
  digest skipped what the link held, so a changed or lost shard there was not seen by a resume. The
  digest follows symlinked directories (a cycle read once).
- a sweep point run on its own (`t3rl run --run-dir <sweep>/pNN`, the line the sweep gives for changing
  one point) left sweep.json, sweep.md and `t3rl runs show <sweep>` saying it failed after it
  succeeded: the point's outcome goes into its sweep's record (launch.run.sweep_point_alone), under the
  sweep's lock; while a sweep launcher holds it, the run says that launcher keeps the record.
- an Optuna search whose every trial failed within max_failure_rate ended in "t3rl failed unexpectedly:
  ValueError: No trials are completed yet" (the sweeper's study.best_trial); a trial that succeeded
  with nothing to score it by was listed `succeeded` while the study recorded it failed; a batch of one
  trial recorded no start and end times. Now: the table and "search ended without a result" (exit 1),
  each trial's status as the study has it, and its times.
- `t3rl run --run-dir <search dir>` reran the search's failed trials as sweep points and said the sweep
  was done: the study never saw them, its best (optimization_results.yaml) stayed as it was, and the
  trials it never asked were not run. sweep.json names a search's overrides (`search`); its dir is
  refused with the command that starts the search again, and a trial run alone is not written into the
  study's record.
- a sweep (and a search) wrote a point's record (config.yaml, manifest, a new overrides.history entry)
  before taking the point's lock: a point another launcher was running (`t3rl run --run-dir <sweep>/pNN`)
  got an attempt in its history that never ran and a manifest not its own. The record is written under
  the lock, as a single run's; a parallel sweep leaves a point another launcher holds as it is.
- a run's tracker (W&B) was named by the manifest's run id, which a first attempt has not written yet
  when its tracker opens: its run was named by the bare timestamp and every resume's `<name>-<ts>`, two
  runs in the tracker for one. The tracker gets RunDir.id, the one id.
- a launcher killed while it wrote a record file left its temporary `.<name>.<random>.tmp` in the run
  dir for good. The launcher's record files are declared (rundir.RECORD_FILES, STAGE_RECORD_FILES,
  runtime/), and the next launcher of the dir removes their temporaries once it holds the lock (a stage's
  own files, which a stage left running may still be writing, are left alone).
- a sweep dir copied (or moved) elsewhere: its sweep.json named each point's run dir by its absolute
  path, so a resume of the copy ran the original's points (writing into the original), and of a moved
  one failed on dirs that were gone. sweep.json names the dir it was written in (`sweep_dir`) and its
  points are read below the dir as it is now (record_files.read_sweep, one reader for every command).
- `--only S` (or `--from S`) after a config change that changed an earlier stage's command: S read that
  stage's old output (made under the old config) while config.yaml recorded the new one. An output
  outside the selection is readable only if it is intact, made by the command planned now, and made
  from readable inputs; otherwise the run is refused, naming the stage and why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from launch.plan.build import Plan
from launch.run.pipeline import PipelineError
from launch.run.rundir import RunDir
from tests.launch.pipeline_helpers import count, run, stage
from tests.support.retool_prepare_only import rec_config_dir

STAMP = "20260101-000000"


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return rec_config_dir(tmp_path, monkeypatch)


def _invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def test_a_sweep_whose_stamped_dir_existed_names_its_points_by_the_dir_it_got(conf, tmp_path, monkeypatch):
    monkeypatch.setattr("launch.run.sweep_runs.stamp_now", lambda: STAMP)
    taken = tmp_path / "plans" / "rec" / f"sweep-{STAMP}"
    taken.mkdir(parents=True)  # another sweep's, started in the same second
    result = _invoke("plan", "-m", "+experiment=rec", "seed=1,2", "--config-dir", str(conf))
    assert result.exit_code == 0, result.output
    sweep = taken.with_name(f"sweep-{STAMP}-1")
    assert json.loads((sweep / "sweep.json").read_text())["name"] == sweep.name
    for index in (0, 1):
        tracking = yaml.safe_load((sweep / f"p{index:02d}" / "config.yaml").read_text())["tracking"]
        assert (tracking["group"], tracking["run_name"]) == (sweep.name, f"{sweep.name}-p{index:02d}")
    assert list(taken.iterdir()) == []  # the other sweep's dir is not touched


def _two_stages(run_dir: Path, marks: Path) -> Plan:
    """a → b, each writing one declared output below the run dir (b's reads a's)."""
    out_a, out_b = run_dir / "stages" / "a" / "out.txt", run_dir / "stages" / "b" / "out.txt"
    return Plan(
        "test",
        run_dir,
        (
            stage("a", marks, f"mkdir -p {out_a.parent} && echo a > {out_a}", verify=(str(out_a),)),
            stage("b", marks, f"cat {out_a} > {out_b}", reads=("a",), verify=(str(out_b),)),
        ),
    )


def test_a_moved_run_dir_resumes_with_nothing_rerun_and_keeps_its_id(conf, tmp_path):
    assert _invoke("run", "+experiment=rec", "--config-dir", str(conf)).exit_code == 0
    (first,) = (tmp_path / "runs" / "rec").iterdir()
    recorded = json.loads((first / "manifest.json").read_text())["run_id"]
    moved = tmp_path / "elsewhere" / "kept" / first.name
    moved.parent.mkdir(parents=True)
    first.rename(moved)
    assert RunDir(moved).id == recorded
    result = _invoke("run", "--run-dir", str(moved))
    assert result.exit_code == 0, result.output
    assert "cached" in result.output and not (moved / "superseded").exists(), result.output
    assert json.loads((moved / "manifest.json").read_text())["run_id"] == recorded


def test_a_copied_run_dir_checks_its_own_outputs_not_the_originals(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    original, copy = tmp_path / "runs" / "r1", tmp_path / "copies" / "r1"
    original.mkdir(parents=True)
    assert run(_two_stages(original, marks), original).status == "succeeded"
    # What `t3rl runs show` reads besides state.json: the config's stages.
    (original / "config.yaml").write_text("stages: {a: {kind: prepare_data}, b: {kind: prepare_data}}\n")
    shutil.copytree(original, copy, symlinks=True)
    again = run(_two_stages(copy, marks), copy)
    assert [d.action for d in again.decisions] == ["cached", "cached"], again.decisions
    assert (count(marks, "a", "done"), count(marks, "b", "done")) == (1, 1)

    (copy / "stages" / "b" / "out.txt").write_text("garbage\n")  # the copy's output, not the original's
    shown = _invoke("runs", "show", str(copy))
    assert "damaged" in shown.output and "stages/b/out.txt" in shown.output, shown.output
    assert "damaged" not in _invoke("runs", "show", str(original)).output
    resumed = run(_two_stages(copy, marks), copy)
    decisions = {d.stage: (d.action, d.reason) for d in resumed.decisions}
    assert decisions["a"][0] == "cached"
    assert decisions["b"] == (
        "run",
        "output damaged: stages/b/out.txt changed since the stage finished (content differs)",
    ), decisions


def _failed_message(tmp_path: Path, body: str) -> str:
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    result = run(Plan("test", run_dir, (stage("a", marks, body),)), run_dir)
    assert result.status == "failed", result
    recorded = json.loads((run_dir / "state.json").read_text())["stages"]["a"]["message"]
    assert recorded == result.results["a"].message
    return recorded


def test_a_stage_killed_by_sigkill_is_recorded_as_such_with_its_log_tail(tmp_path):
    message = _failed_message(tmp_path, "echo loading shard 7 of 8\nbash -c 'kill -9 $$'")
    assert message.startswith("killed by SIGKILL (exit code 137): the kernel's out-of-memory killer"), message
    assert "; its log ends: loading shard 7 of 8 / " in message and "Killed" in message, message


def test_a_failed_exit_ends_with_what_this_attempt_printed_not_an_earlier_one(tmp_path):
    body = "if [ ! -e {m}/again ]; then touch {m}/again; echo first attempt; exit 1; fi\nexit 3"
    first = _failed_message(tmp_path, body.format(m=tmp_path / "marks"))
    assert first.startswith("exit code 1; see ") and first.endswith("its log ends: first attempt"), first
    second = _failed_message(tmp_path, body.format(m=tmp_path / "marks"))
    assert second.startswith("exit code 3; see ") and second.endswith("it printed nothing"), second


def _code(monkeypatch: pytest.MonkeyPatch, sha: str) -> dict[str, object]:
    """t3rl's checkout at commit `sha` for what follows (the manifest's and the resume's git state)."""
    code = {"sha": sha * 40, "dirty": False}
    monkeypatch.setattr("launch.run.rundir.git_state", lambda root: dict(code))
    return code


def test_a_resume_after_the_code_changed_names_the_stages_kept_from_the_old_code(conf, tmp_path, monkeypatch):
    old = _code(monkeypatch, "a")
    assert _invoke("run", "+experiment=rec", "--config-dir", str(conf)).exit_code == 0
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()
    assert json.loads((run_dir / "state.json").read_text())["stages"]["prepare_data"]["code"] == old

    new = _code(monkeypatch, "b")
    preview = _invoke("plan", "--run-dir", str(run_dir))
    resumed = _invoke("run", "--run-dir", str(run_dir))
    for result in (preview, resumed):
        assert result.exit_code == 0, result.output
        out = " ".join(result.output.split())
        assert "code changed since prepare_data ran (t3rl at aaaaaaaaaa → bbbbbbbbbb)" in out, out
        assert f"t3rl run --run-dir {run_dir} --from prepare_data` runs them again" in out, out
    assert json.loads((run_dir / "manifest.json").read_text())["git"] == new
    assert json.loads((run_dir / "state.json").read_text())["stages"]["prepare_data"]["code"] == old
    again = _invoke("run", "--run-dir", str(run_dir), "--from", "prepare_data")
    assert again.exit_code == 0, again.output
    assert json.loads((run_dir / "state.json").read_text())["stages"]["prepare_data"]["code"] == new
    assert "code changed" not in _invoke("plan", "--run-dir", str(run_dir)).output


def test_a_point_time_stays_true_when_the_wall_clock_goes_back(tmp_path, monkeypatch):
    from rich.console import Console

    from launch.run.parallel import PointJob, PointScheduler
    from launch.run.sweep_view import points_table

    readings = iter(range(10**9, 0, -3600))  # the system clock set back an hour at every reading
    monkeypatch.setattr("time.time", lambda: float(next(readings)))
    (tmp_path / "p00").mkdir()
    job = PointJob(0, tmp_path / "p00", ("bash", "-c", "true"), log=tmp_path / "p00" / "launcher.log")
    progress = PointScheduler([job], poll_s=0.01).run()
    assert progress[0].status == "succeeded"
    console = Console(record=True, width=200)
    console.print(points_table("sweep", {0: "seed=1"}, progress, {}, "metric"))
    assert "-" not in console.export_text().split("seed=1")[1].split("\n")[0], console.export_text()


def test_a_damaged_file_below_a_symlinked_output_subdir_reruns_its_stage(tmp_path):
    marks, run_dir, storage = tmp_path / "marks", tmp_path / "run", tmp_path / "storage"
    for directory in (marks, run_dir, storage):
        directory.mkdir()
    out = run_dir / "stages" / "a" / "checkpoint"
    body = (
        f"mkdir -p {out} {storage}/shards && echo weights > {storage}/shards/0.bin && "
        f"ln -sfn {storage}/shards {out}/shards && ln -sfn {out} {out}/shards/loop && echo 1 > {out}/step"
    )
    plan = Plan("test", run_dir, (stage("a", marks, body, verify=(str(out),)),))
    assert run(plan, run_dir).status == "succeeded"
    assert [d.action for d in run(plan, run_dir).decisions] == ["cached"]
    (storage / "shards" / "0.bin").write_text("truncated")
    again = run(plan, run_dir)
    assert [(d.action, d.reason.split(":")[0]) for d in again.decisions] == [("run", "output damaged")]


def _sweep_whose_second_point_failed(conf: Path, tmp_path: Path) -> Path:
    """A sweep of two points run to the end, its sweep.json and p01's own record then saying p01 failed
    (an earlier failure: a resume takes whether a point succeeded from its own record)."""
    assert _invoke("run", "-m", "+experiment=rec", "seed=1,2", "--config-dir", str(conf)).exit_code == 0
    (sweep,) = (tmp_path / "runs" / "rec").iterdir()
    record = json.loads((sweep / "sweep.json").read_text())
    record["points"][1].update(status="failed", error="stage prepare_data: exit code 1")
    (sweep / "sweep.json").write_text(json.dumps(record))
    state = json.loads((sweep / "p01" / "state.json").read_text())
    state["stages"]["prepare_data"].update(status="failed", message="exit code 1")
    state["pipeline"].update(status="failed")
    (sweep / "p01" / "state.json").write_text(json.dumps(state))
    return sweep


def test_a_sweep_point_run_alone_records_its_outcome_in_the_sweep(conf, tmp_path):
    from launch.files import exclusive_lock

    sweep = _sweep_whose_second_point_failed(conf, tmp_path)

    with exclusive_lock(sweep / ".lock"):  # the sweep's launcher runs: its record is its own
        held = _invoke("run", "--run-dir", str(sweep / "p01"))
    assert held.exit_code == 0, held.output
    assert "launcher is running; its record of this point is the launcher's" in " ".join(held.output.split())
    assert json.loads((sweep / "sweep.json").read_text())["points"][1]["status"] == "failed"

    alone = _invoke("run", "--run-dir", str(sweep / "p01"))
    assert alone.exit_code == 0, alone.output
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [(p["status"], p["error"]) for p in points] == [("succeeded", None), ("succeeded", None)]
    assert "| succeeded |" in (sweep / "sweep.md").read_text().splitlines()[-1]
    assert "failed" not in _invoke("runs", "show", str(sweep)).output


SEEDS = """\
# @package _global_
defaults:
  - override /hydra/sweeper: optuna
hydra:
  sweeper:
    direction: maximize
    study_name: seeds
    storage: null
    n_trials: 2
    n_jobs: 1
    max_failure_rate: 1.0
    params:
      seed: choice(1, 2)
"""


def test_a_search_whose_every_trial_failed_ends_with_its_table_not_a_crash(conf, tmp_path):
    (conf / "hparams_search").mkdir()
    (conf / "hparams_search" / "seeds.yaml").write_text(SEEDS)
    result = _invoke("run", "-m", "+experiment=rec", "hparams_search=seeds", "--config-dir", str(conf))
    out = " ".join(result.output.split())
    assert result.exit_code == 1, out
    assert "search ended without a result: none of the 2 trial(s) gave a metric" in out, out
    (sweep,) = (tmp_path / "runs" / "rec").iterdir()
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [(p["status"], p["error"]) for p in points] == [("failed", "no eval summary")] * 2
    assert all(p["started_at"] and p["finished_at"] for p in points), points

    resumed = _invoke("run", "--run-dir", str(sweep))
    out = " ".join(resumed.output.split())
    assert resumed.exit_code == 1, out
    assert "is an Optuna search: its study chose each trial" in out, out
    assert "Start the search again: t3rl run -m +experiment=rec hparams_search=seeds" in out, out
    assert not (sweep / "p00" / "stages" / "prepare_data" / "log.txt").read_text().count("attempt 2")
    alone = _invoke("run", "--run-dir", str(sweep / "p00"))
    assert "is an Optuna search: this run of a trial is not in its study" in " ".join(alone.output.split())
    assert json.loads((sweep / "sweep.json").read_text())["points"] == points


def test_a_sweep_resume_never_writes_the_record_of_a_point_another_launcher_holds(conf, tmp_path):
    from launch.files import exclusive_lock

    sweep = _sweep_whose_second_point_failed(conf, tmp_path)
    point = sweep / "p01"
    before = {
        name: (point / name).read_bytes()
        for name in ("config.yaml", "manifest.json", "overrides.history.yaml")
    }
    with exclusive_lock(point / ".lock"):  # `t3rl run --run-dir <sweep>/p01` running meanwhile
        resumed = _invoke("run", "--run-dir", str(sweep))
    assert resumed.exit_code == 1 and "is in use by another t3rl process" in resumed.output, resumed.output
    assert {name: (point / name).read_bytes() for name in before} == before


def test_a_run_and_its_resume_open_their_tracker_under_one_run_id(conf, tmp_path, monkeypatch):
    opened: list[str] = []

    def open_tracker(tracking, **kwargs):
        opened.append(kwargs["run_id"])

    monkeypatch.setattr("launch.plan.tracking.open_tracker", open_tracker)
    assert _invoke("run", "+experiment=rec", "--config-dir", str(conf)).exit_code == 0
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()
    assert _invoke("run", "--run-dir", str(run_dir)).exit_code == 0
    recorded = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    assert opened == [recorded, recorded] == [f"rec-{run_dir.name}"] * 2


def test_the_next_launcher_removes_the_temporaries_a_killed_one_left_beside_its_record(tmp_path):
    marks, run_dir = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    run_dir.mkdir()
    plan = _two_stages(run_dir, marks)
    assert run(plan, run_dir).status == "succeeded"
    left = [
        run_dir / ".state.json.k1l2m3.tmp",
        run_dir / ".manifest.json.n4o5p6.tmp",
        run_dir / "stages" / "a" / ".status.json.q7r8s9.tmp",
        run_dir / "runtime" / ".a.yaml.t0u1v2.tmp",
    ]
    own = run_dir / "stages" / "a" / ".out.txt.w3x4y5.tmp"  # a stage's own file: never the launcher's
    for path in (*left, own):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half")
    assert [d.action for d in run(plan, run_dir).decisions] == ["cached", "cached"]
    assert [path for path in left if path.exists()] == [] and own.exists()


def test_a_copied_sweep_resumes_its_own_points_not_the_originals(conf, tmp_path):
    sweep = _sweep_whose_second_point_failed(conf, tmp_path)
    copy = tmp_path / "kept" / sweep.name
    shutil.copytree(sweep, copy, symlinks=True)
    history = (sweep / "p01" / "overrides.history.yaml").read_bytes()

    resumed = _invoke("run", "--run-dir", str(copy))
    assert resumed.exit_code == 0, resumed.output
    assert (sweep / "p01" / "overrides.history.yaml").read_bytes() == history  # the original untouched
    assert (copy / "p01" / "overrides.history.yaml").read_bytes() != history
    points = json.loads((copy / "sweep.json").read_text())["points"]
    assert [(p["run_dir"], p["status"]) for p in points] == [
        (str(copy / "p00"), "succeeded"),
        (str(copy / "p01"), "succeeded"),
    ]


def test_only_refuses_to_read_an_earlier_output_the_changed_config_made_stale(tmp_path):
    marks, run_dir = tmp_path / "marks", tmp_path / "run"
    marks.mkdir()
    run_dir.mkdir()
    assert run(_two_stages(run_dir, marks), run_dir).status == "succeeded"
    out_a = run_dir / "stages" / "a" / "out.txt"
    plan = _two_stages(run_dir, marks)
    a = plan.stages[0]._replace(commands=(f"mkdir -p {out_a.parent} && echo A > {out_a}",))
    changed = plan._replace(stages=(a, *plan.stages[1:]))  # the config changed what a writes
    with pytest.raises(PipelineError, match=r"outputs of a, which cannot be read; a: its command changed"):
        run(changed, run_dir, only="b")
    assert count(marks, "b", "started") == 1  # b did not run again on a's stale output
    assert [d.action for d in run(changed, run_dir).decisions] == ["run", "run"]
