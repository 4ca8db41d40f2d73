"""Hunt wave ten on the launcher's records and resume: kinds earlier waves left open.

- A stage's fingerprint holds what its output is, not where its store is: the entries of a content-keyed
  store a command names (`launch.plan.build.CONTENT_STORES`: the conversion cache in
  `paths.checkpoints_dir`) count relative to the store, so a store moved (another machine, the setting
  changed) reruns nothing; a record an older t3rl wrote is read and upgraded, not rerun.
- A local run's Ray head is its own: its processes carry the stage's execution id and are stopped with
  the stage (its end, a Ctrl-C, a resume's `stop_stale`), never by `ray stop`, which stopped every head
  of the machine (another run's beside it); each head has its own temp dir. The head also outlives the
  `ray start` that starts it (its daemons stay in that command's process group, which the executor
  stopped the moment `ray start` returned, before the train stage could reach the head).
- A variable of the shell that changes how a stage runs but is no part of the run's identity
  (`launch.run.inherited_env.INHERITED`: CUDA_VISIBLE_DEVICES, NCCL_*, PYTHONHASHSEED, the hub cache)
  is kept in the stage's record when its command starts; a resume (and its preview) that keeps the
  stage's output names each one that changed since, with the line that reruns it.
- A sweep point whose run dir was deleted runs again from the sweep's record of it (was: the resume said
  so, then stopped at the point's missing overrides.yaml).
- A stage dir no record accounts for (state.json deleted by hand, or the stage's record taken out of
  it) is moved to superseded/ before the stage runs, not run into: an eval's `--resume` went on from
  the episodes of a command and inputs nothing recorded, while the decision said "never ran".
- A list typed after `t3rl run --run-dir <sweep dir>` to add a point (`seed=1,2,3`) is answered with the
  sweep's own line holding it, which extends the sweep (`sweep_extend.extending_command`); was "run it
  alone with t3rl run --run-dir <sweep>/pNN seed=1,2,3", a list no single run takes.
- The line a run stopped or failed before its selected stage started prints keeps `--from`/`--only`
  (`exit_codes.RESUME_WITH`): after a full disk as `--from S`'s record was written, `t3rl run --run-dir
  DIR` left S cached; once S started, the plain line is the one (S goes on in place).
- A run dir held by a launcher suspended with Ctrl-Z (pressed for Ctrl-C): the refusal says it is
  suspended and what lets it go on (`LockHeld.who`); "wait for it to finish" waited forever.
- A run dir on a read-only mount: said so, with the mount to remount read-write (was: "not writable by
  this user ... or make it writable by this user", a fix no mode change gives there).
"""

from __future__ import annotations

import errno
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import alive, count, run, stage
from rich.console import Console
from run_configs import make_run, t3rl_stages
from typer.testing import CliRunner

from launch.checks.rules import kinds, local_dirs
from launch.cli.app import app
from launch.config.schema import LocalExecutorConfig, RayExecutorConfig
from launch.output.plain import PlainConsole
from launch.plan.build import CONTENT_STORES, Plan, PlanContext, build_plan
from launch.plan.stages import DIR
from launch.run import sweep_runs
from launch.run.executors.local import STAGE_RUN_ENV, LocalExecutor, _group_handle
from launch.run.executors.ray_jobs import RayExecutor
from launch.run.inherited_env import INHERITED, inherited
from launch.run.pipeline import (
    UNRECORDED,
    PipelineError,
    fingerprint,
    older_fingerprints,
    run_dir_lock,
    run_pipeline,
)
from launch.run.rundir import RunDir
from launch.run.single import _show_environ_change, unwritable_record
from launch.run.sweep import PointRecord, SweepSummary, expand_points
from launch.run.sweep_extend import extending_command
from tests.support.rec_sweep import record_sweep
from tests.support.retool_prepare_only import rec_config_dir

# --- kind 1: a store moved, its entries not --------------------------------------------------------


def _store_plan(run_dir: Path, marks: Path, store: Path) -> Plan:
    """A conversion into a content-keyed store, and a train stage reading it by its path there."""
    entry = store / "qwen-0123abcd_torch_dist"
    convert = stage("convert", marks, f"mkdir -p {entry} && echo w > {entry}/shard", verify={str(entry): DIR})
    train = stage("train", marks, f"test -s {entry}/shard && echo --ref-load={entry}", reads=("convert",))
    return Plan("test", run_dir, (convert, train), stores=(("checkpoints_dir", str(store)),))


@pytest.mark.parametrize("older", [False, True])
def test_a_store_moved_reruns_nothing_and_an_older_record_is_upgraded_not_rerun(
    tmp_path: Path, older: bool
) -> None:
    run_dir, marks, store, moved = (tmp_path / n for n in ("run", "marks", "ckpt", "elsewhere/ckpt"))
    run_dir.mkdir()
    marks.mkdir()
    plan = _store_plan(run_dir, marks, store)
    assert run(plan, run_dir).status == "succeeded"
    state_file = run_dir / "state.json"
    if older:  # as a t3rl before stores wrote it: the run dir alone anchored, the store's path absolute
        state = json.loads(state_file.read_text())
        for name, rec in state["stages"].items():
            rec["fingerprint"] = older_fingerprints(plan, plan.stage(name))[0]
        state_file.write_text(json.dumps(state))
        kept = run(plan, run_dir)
        assert [d.action for d in kept.decisions] == ["cached", "cached"]
        upgraded = json.loads(state_file.read_text())["stages"]
        assert {n: r["fingerprint"] for n, r in upgraded.items()} == {
            s.name: fingerprint(plan, s) for s in plan.stages
        }
    moved.parent.mkdir()
    shutil.move(store, moved)
    resumed = run(_store_plan(run_dir, marks, moved), run_dir)
    assert [(d.stage, d.action) for d in resumed.decisions] == [("convert", "cached"), ("train", "cached")]
    assert [count(marks, n, "done") for n in ("convert", "train")] == [1, 1]


def _plans(**paths: str) -> list[Plan]:
    plans = []
    for value in paths.values():
        run = make_run(stages=t3rl_stages(stage2=True))
        run = run.model_copy(update={"paths": run.paths.model_copy(update={"checkpoints_dir": value})})
        ctx = PlanContext(Path("/runs/r1"), Path("/base"), "/t3rl", "python3", "id", {})
        plans.append(build_plan(run, ctx))
    return plans


def test_every_stage_of_a_real_plan_keeps_its_fingerprint_wherever_the_store_is() -> None:
    """Over every stage kind that names the conversion cache: only where the store is changes, and no
    stage's fingerprint does; a stage that names no store keeps the fingerprint an older t3rl recorded
    (nothing to upgrade)."""
    assert CONTENT_STORES == ("checkpoints_dir",)
    here, there = _plans(here="/ckpt", there="/mnt/other/ckpt")
    named = [s.name for s in here.stages if "/ckpt/" in s.script()]
    assert named  # the conversion and the train stages reading it
    for a, b in zip(here.stages, there.stages, strict=True):
        assert a.script() != b.script() or a.name not in named
        assert fingerprint(here, a) == fingerprint(there, b), a.name
        assert (fingerprint(here, a) == older_fingerprints(here, a)[0]) == (a.name not in named), a.name


def test_a_store_counts_only_with_an_entry_below_it() -> None:
    """A path that merely begins as the store does (`/ckpt2/...`) is not one of its entries."""
    s = stage("s", Path("/m"), "cat /ckpt2/x")
    assert s.fingerprint("/r", (("checkpoints_dir", "/ckpt"),)) == s.fingerprint("/r")
    t = stage("s", Path("/m"), "cat /ckpt/x")
    u = stage("s", Path("/m"), "cat /c/x")
    assert t.fingerprint("/r", (("checkpoints_dir", "/ckpt"),)) == u.fingerprint(
        "/r", (("checkpoints_dir", "/c"),)
    )


# --- kind 2: a local run's Ray head, its own --------------------------------------------------------

# A fake `ray`: `start` leaves a daemon in its own process group and environment, as the real one leaves
# its head's processes (gcs_server, raylet, ...); `stop` stops every head of the machine, as the real one.
_FAKE_RAY = """#!/usr/bin/env bash
echo "$@" >> {dir}/ray.calls
case $1 in
  start) sleep 60 > /dev/null 2>&1 & echo $! >> {dir}/heads; exit {start_exit} ;;
  stop) for pid in $(cat {dir}/heads); do kill $pid 2> /dev/null; done ;;
esac
"""


def _ray_run(tmp_path: Path, name: str, body: str, start_exit: int = 0) -> object:
    """A one-stage run `name` whose stage needs a Ray head, with the fake `ray` of `tmp_path`."""
    fake = tmp_path / "ray"
    fake.write_text(_FAKE_RAY.format(dir=tmp_path, start_exit=start_exit))
    fake.chmod(0o755)
    run_dir = tmp_path / name
    run_dir.mkdir()
    train = stage("train", tmp_path, body, needs_ray_head=True, gpus=1)
    executor = LocalExecutor(LocalExecutorConfig(stop_grace_s=1.0), out=io.StringIO(), ray_bin=str(fake))
    return run_pipeline(Plan(name, run_dir, (train,)), RunDir(run_dir), executor)


def test_a_run_reaches_its_own_head_and_stops_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "visible_cuda_gpus", lambda: 1)
    # Another run's head on this machine, as its `ray start` left it.
    other = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, STAGE_RUN_ENV: "another-run"}, start_new_session=True
    )
    (tmp_path / "heads").write_text(f"{other.pid}\n")
    try:
        # The stage reaches its head: its daemon still runs (not gone, nor a zombie) while the stage does.
        result = _ray_run(
            tmp_path, "a", f's=$(cut -d" " -f3 /proc/$(tail -n 1 {tmp_path}/heads)/stat) && [ "$s" != Z ]'
        )
        assert result.status == "succeeded", result.results["train"].message
        own = int((tmp_path / "heads").read_text().split()[-1])
        assert not alive(own)  # stopped with its stage
        assert alive(other.pid)  # the other run's head runs on
        calls = (tmp_path / "ray.calls").read_text().splitlines()
        assert [c.split()[0] for c in calls] == ["start"]  # no `ray stop`: it stops every head
        _ray_run(tmp_path, "b", "true")
        temp_dirs = [
            c.split("--temp-dir ")[1].split()[0] for c in (tmp_path / "ray.calls").read_text().splitlines()
        ]
        assert len(set(temp_dirs)) == 2 and all(len(d) < 48 for d in temp_dirs)  # apart; room for sockets
    finally:
        other.kill()
        other.wait()


def test_a_head_whose_start_failed_is_stopped_with_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "visible_cuda_gpus", lambda: 1)
    result = _ray_run(tmp_path, "a", "true", start_exit=1)
    assert result.status == "failed"  # type: ignore[attr-defined]
    left = int((tmp_path / "heads").read_text().split()[-1])
    assert not alive(left)


def test_a_resume_stops_the_head_a_killed_launcher_left_with_its_stage(tmp_path: Path) -> None:
    """The stage's group and its head's, each with the execution's id: both stopped, not the group alone
    (the head left running held the port the next attempt's head needs)."""
    env = {**os.environ, STAGE_RUN_ENV: "run-1"}
    command = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
    head = subprocess.Popen(["sleep", "60"], env=env, start_new_session=True)
    try:
        executor = LocalExecutor(LocalExecutorConfig(stop_grace_s=1.0), out=io.StringIO())
        note = executor.stop_stale(
            stage("train", tmp_path), {**_group_handle(command.pid), "run_id": "run-1"}
        )
        assert note is not None and str(head.pid) in note
        assert command.wait(timeout=10) is not None and head.wait(timeout=10) is not None
    finally:
        for process in (command, head):
            process.kill()
            process.wait()


# --- kind 3: the shell's variables that change how a stage runs -------------------------------------


def test_a_resume_names_each_inherited_variable_that_changed_since_a_kept_stage_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    for name in [n for n in os.environ if inherited({n: ""})]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("HF_TOKEN", "hf_notrecordedxxxxxxxxxxxxxxxxxxxxxxx")  # a credential: not declared
    plan = Plan("test", run_dir, (stage("a", marks), stage("b", marks, reads=("a",))))
    assert run(plan, run_dir).status == "succeeded"
    records = json.loads((run_dir / "state.json").read_text())["stages"]
    assert [records[n]["environ"] for n in ("a", "b")] == [{"CUDA_VISIBLE_DEVICES": "0,1"}] * 2

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    out = io.StringIO()
    _show_environ_change(RunDir(run_dir), PlainConsole(file=out, soft_wrap=True))
    assert out.getvalue() == (
        "environment changed since a, b ran (CUDA_VISIBLE_DEVICES: 0,1 → 2,3; NCCL_P2P_DISABLE: unset → 1): "
        f"not part of the run's identity, their outputs are kept; `t3rl run --run-dir {run_dir} --from a` "
        "runs them again with it\n"
    )
    # No part of the identity: nothing reruns for it.
    assert [d.action for d in run(plan, run_dir).decisions] == ["cached", "cached"]


def test_a_record_with_no_environ_reads_back(tmp_path: Path) -> None:
    """An adopted stage's record (and an older t3rl's) keeps none: `null` is read, not refused."""
    (tmp_path / "state.json").write_text(
        json.dumps(
            {
                "version": 1,
                "stages": {"a": {"status": "skipped", "fingerprint": "f", "run_id": "r", "environ": None}},
            }
        )
    )
    assert RunDir(tmp_path).load_state().stages["a"].environ is None


@pytest.mark.parametrize("other_stages", ["local", "ray"])
def test_a_stage_run_in_a_ray_clusters_environment_records_none_of_the_launchers(other_stages: str) -> None:
    """Only a stage whose processes get the launcher's environment keeps its variables: under
    executor=ray a cluster job runs in the cluster's (a data or eval stage run here still gets it)."""
    executor = RayExecutor(RayExecutorConfig(address="http://127.0.0.1:8265", other_stages=other_stages))
    plan = build_plan(
        make_run(stages=t3rl_stages()), PlanContext(Path("/r"), Path("/b"), "/t", "python3", "i", {})
    )
    assert {s.name: executor.passes_environment(s) for s in plan.stages} == {
        s.name: not executor.on_cluster(s) for s in plan.stages
    }
    assert any(executor.passes_environment(s) for s in plan.stages) == (other_stages == "local")
    assert all(LocalExecutor().passes_environment(s) for s in plan.stages)


@pytest.mark.parametrize("pattern", sorted(INHERITED))
def test_every_declared_variable_is_kept_and_no_other(pattern: str) -> None:
    name = pattern.replace("*", "SOME_KNOB")
    assert inherited({name: "v", "HF_TOKEN": "hf_x", "PATH": "/bin", "X" + name: "v"}) == {name: "v"}


# --- kind 4: a sweep point whose run dir is gone ----------------------------------------------------


def test_a_sweep_point_whose_run_dir_was_deleted_runs_again_from_the_sweeps_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume said the point would run again, then stopped at its missing overrides.yaml (exit 1): the
    sweep's record holds what the point is (its overrides; its siblings, where and with which config dirs
    the sweep started), and the point runs again as it first did, its record the same."""
    sweep, _ = record_sweep(tmp_path, monkeypatch)
    before = (sweep / "p00" / "overrides.yaml").read_text()
    shutil.rmtree(sweep / "p00")
    out = io.StringIO()
    assert sweep_runs.resume_sweep(sweep, None, None, Console(file=out, width=300)) == 0, out.getvalue()
    assert (sweep / "p00" / "overrides.yaml").read_text() == before
    assert json.loads((sweep / "p00" / "state.json").read_text())["pipeline"]["status"] == "succeeded"
    shutil.rmtree(sweep / "p00")
    shutil.rmtree(sweep / "p01")
    with pytest.raises(PipelineError, match=r"no point of .* has its run dir left"):
        sweep_runs.resume_sweep(sweep, None, None, Console(file=io.StringIO()))


# --- kind 5: a run dir on a read-only file system ---------------------------------------------------


@pytest.mark.parametrize("inside", ["run", "run/stages/deeper/new"])
def test_a_record_on_a_read_only_mount_is_blamed_on_the_mount_with_its_remount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inside: str
) -> None:
    """statvfs's ST_RDONLY below `mount` (as a `mount -o ro` there gives): the reason and the fix name it,
    for an existing dir and one to be made; a dir only its modes refuse keeps the modes' words."""
    mount = tmp_path / "ro"
    (mount / "run").mkdir(parents=True)
    real_statvfs, real_access = os.statvfs, os.access

    class _Flags:
        def __init__(self, flags: int) -> None:
            self.f_flag = flags

    def statvfs(path: object) -> object:
        below = Path(path) == mount or mount in Path(path).parents
        return _Flags(os.ST_RDONLY) if below else real_statvfs(path)  # type: ignore[arg-type]

    def access(path: object, mode: int) -> bool:
        below = Path(path) == mount or mount in Path(path).parents  # type: ignore[arg-type]
        return not (below and mode & os.W_OK) and real_access(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "statvfs", statvfs)
    monkeypatch.setattr(os, "access", access)
    why = unwritable_record(mount / inside, [])
    assert why is not None and "on a read-only file system" in why and "by this user" not in why, why
    assert why.endswith(f"(or remount {mount} read-write)"), why
    assert local_dirs.read_only_mount(tmp_path) is None
    monkeypatch.setattr(os, "statvfs", real_statvfs)  # the same refusal, from the modes alone
    assert unwritable_record(mount / inside, []).endswith("writable by this user)")  # type: ignore[union-attr]


# --- kind 6: a stage dir no record accounts for -----------------------------------------------------


@pytest.mark.parametrize("how", ["state.json deleted", "the stage's record taken out"])
def test_a_stage_dir_without_a_record_is_moved_aside_not_run_into(tmp_path: Path, how: str) -> None:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    episodes = run_dir / "stages" / "eval" / "episodes"
    # As an eval's --resume: what its dir holds is gone on from.
    body = f"[ -e {episodes} ] && echo x >> {marks}/went_on; echo episode >> {episodes}"
    plan = Plan("test", run_dir, (stage("data", marks), stage("eval", marks, body, reads=("data",))))
    assert run(plan, run_dir).status == "succeeded"
    state_file = run_dir / "state.json"
    if how == "state.json deleted":
        state_file.unlink()
    else:
        state = json.loads(state_file.read_text())
        del state["stages"]["eval"]
        state_file.write_text(json.dumps(state))
    again = run(plan, run_dir)
    assert (again.decisions[1].action, again.decisions[1].reason) == ("run", UNRECORDED)
    assert not (marks / "went_on").exists()
    assert episodes.read_text() == "episode\n"
    assert [p.name for p in (run_dir / "superseded").iterdir()] != []


# --- kind 7: a list typed to a sweep's resume ------------------------------------------------------


@pytest.mark.parametrize(
    ("swept", "given"),
    [
        ([["seed=1"], ["seed=2"]], ["seed=1,2,3"]),
        (
            [["seed=1", "lr=0.1"], ["seed=1", "lr=0.2"], ["seed=2", "lr=0.1"], ["seed=2", "lr=0.2"]],
            ["lr=0.1,0.2,0.3"],
        ),
        ([["seed=1"], ["seed=2"]], ["env.data.num_ids=5,6"]),  # a fixed key made a list
    ],
)
def test_a_list_given_to_a_sweeps_resume_gets_the_line_that_extends_the_sweep(
    tmp_path: Path, swept: list[list[str]], given: list[str]
) -> None:
    """The line offered holds every point the sweep has and more (what `extendable` asks of a line to
    extend it), with the fixed overrides as typed (`~key`, `+key=v`)."""
    fixed = ["+experiment=quickstart", "~stages.eval_tiny", "env.data.num_ids=5"]
    points = {
        i: PointRecord(i, varying, [*fixed, *varying], run_dir=str(tmp_path / f"p{i:02d}"))
        for i, varying in enumerate(swept)
    }
    summary = SweepSummary(tmp_path, "sweep-x", points=points)
    line = extending_command(summary, given)
    assert line is not None and line.startswith("t3rl run -m "), line
    now = {frozenset(p.overrides) for p in expand_points(shlex.split(line)[3:])}
    had = {frozenset(p.overrides) for p in points.values()}
    assert had < now, line
    assert extending_command(summary, ["seed=7"]) is None  # no list: a point's own change


# --- kind 8: the resume line of a run stopped before its selected stage ----------------------------


def test_the_resume_line_keeps_the_selection_while_its_stage_has_not_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = rec_config_dir(tmp_path, monkeypatch)
    runner = CliRunner()
    first = runner.invoke(app, ["run", "+experiment=rec", "--config-dir", str(conf)], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(run_dir / "overrides.history.yaml"))

    monkeypatch.setattr(RunDir, "append_history", full)
    resumed = runner.invoke(app, ["run", "--run-dir", str(run_dir), "--from", "prepare_data"])
    assert resumed.exit_code == 1, resumed.output
    said = " ".join(resumed.output.split())
    assert f"then `t3rl run --run-dir {run_dir} --from prepare_data` resumes the run" in said, said


# --- kind 9: a run dir held by a suspended launcher ------------------------------------------------


def test_a_run_dir_held_by_a_suspended_launcher_is_said_suspended(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); time.sleep(60)",
            str(tmp_path / ".lock"),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(PipelineError) as running, run_dir_lock(RunDir(tmp_path)):
            pass
        assert f"(pid {holder.pid}):" in str(running.value)
        os.kill(holder.pid, signal.SIGSTOP)
        os.waitpid(holder.pid, os.WUNTRACED)  # returns once it is stopped (the signal is asynchronous)
        with pytest.raises(PipelineError) as stopped, run_dir_lock(RunDir(tmp_path)):
            pass
        assert (
            f"(pid {holder.pid}, suspended: Ctrl-Z stopped it; `fg` in its terminal, or "
            f"`kill -CONT {holder.pid}`" in str(stopped.value)
        )
    finally:
        holder.kill()
        holder.wait()
