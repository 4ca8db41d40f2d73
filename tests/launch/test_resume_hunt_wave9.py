"""Hunt wave nine on the launcher's records and resume: kinds earlier waves left open.

- A stage that exits 0 with an empty output succeeded: each stage now declares what each output it writes
  must hold (`launch.plan.stages.Holds`: a file with bytes, a directory with entries and its markers), the
  pipeline checks the declaration when the stage ends (and a resume, of a record an older t3rl wrote), the
  stage is recorded failed naming the output, and a resume runs it again. Every stage kind's declaration
  agrees with what its command writes.
"""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path
from typing import get_args

import pytest
from pipeline_helpers import alive, count, run, stage
from run_configs import group, make_run, t3rl_stages
from test_resume_verifies_outputs import dirs  # noqa: F401  (a fixture: a run dir and a marks dir)

from launch.cli.failures import exit_code_for
from launch.config.schema import SlurmExecutorConfig
from launch.files import host_local_locks, is_locked
from launch.plan.build import Plan, PlanContext, build_plan
from launch.plan.builders.builder import COMPLETE_MARKER
from launch.plan.stages import DIR, FILE, LATEST_CHECKPOINT, MAY_BE_EMPTY, Holds, Stage, StageKind, marked
from launch.run.executors.base import StageContext
from launch.run.executors.dry import DryExecutor
from launch.run.executors.local import STAGE_RUN_ENV, _group_handle
from launch.run.executors.records import write_record
from launch.run.executors.slurm import ACTIVE, SlurmExecutor, SlurmRecord
from launch.run.output_digest import digest
from launch.run.pipeline import PipelineError, SilentReporter, decide, fingerprint, run_pipeline
from launch.run.rundir import RunDir, RunState, StageRecord

# --- kind 1: an output that exists but holds nothing ------------------------------------------------


@pytest.mark.parametrize(
    ("holds", "first", "why"),
    [
        (FILE, ": > {out}", "stages/a/out is empty (declared: a file with bytes)"),
        (DIR, "mkdir -p {out}", "stages/a/out is an empty directory (declared: a directory with entries)"),
        (
            marked(LATEST_CHECKPOINT),
            "mkdir -p {out} && echo w > {out}/shard.bin",
            "stages/a/out has no latest_checkpointed_iteration.txt (declared: a directory with "
            "latest_checkpointed_iteration.txt; it is not whole)",
        ),
        (FILE, "mkdir -p {out}", "stages/a/out is not a file (declared: a file with bytes)"),
    ],
)
def test_a_stage_exiting_0_with_an_output_holding_less_than_declared_failed_and_reruns(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
    holds: Holds,
    first: str,
    why: str,
) -> None:
    run_dir, marks = dirs
    out = run_dir / "stages" / "a" / "out"
    whole = f"rm -rf {out}; " + (
        f"echo data > {out}"
        if holds.kind == "file"
        else f"mkdir -p {out} && echo w > {out}/shard.bin && echo 1 > {out}/{LATEST_CHECKPOINT}"
    )
    # The first attempt leaves `first` behind and exits 0; the next one writes the whole output.
    body = f"if [ ! -e {marks}/tried ]; then touch {marks}/tried; {first.format(out=out)}; else {whole}; fi"
    plan = Plan("test", run_dir, (stage("a", marks, body, verify={str(out): holds}),))
    result = run(plan, run_dir)
    assert result.status == "failed"
    assert result.results["a"].message == f"exited 0 but {why}"
    record = json.loads((run_dir / "state.json").read_text())["stages"]["a"]
    assert (record["status"], record["message"]) == ("failed", f"exited 0 but {why}")

    again = run(plan, run_dir)
    assert [(d.stage, d.action) for d in again.decisions] == [("a", "resume")]
    assert again.status == "succeeded"


def test_a_finished_record_of_an_empty_output_is_damaged_on_resume(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
) -> None:
    """A record an older t3rl wrote (it checked existence only) of an empty summary: the digest matches,
    the declaration does not, and the stage runs again naming why."""
    run_dir, marks = dirs
    summary = run_dir / "stages" / "a" / "summary.json"
    write = f"echo '{{}}' > {summary}"
    plan = Plan("test", run_dir, (stage("a", marks, write, verify={str(summary): FILE}),))
    assert run(plan, run_dir).status == "succeeded"
    summary.write_text("")
    state = RunDir(run_dir).load_state()
    state.stages["a"].outputs[str(summary)] = digest(summary)  # as if recorded so
    (decision,) = decide(plan, state)
    assert (decision.action, decision.reason) == (
        "run",
        "output damaged: stages/a/summary.json is empty (declared: a file with bytes)",
    )


# --- every stage kind: the declaration agrees with the command -------------------------------------


def _plans(tmp_path: Path) -> list[Plan]:
    """Every stage kind, through the dry executor (each stage's command.sh written, nothing run): the GPU
    pipeline (data, base model, HF → torch_dist, train, torch_dist → HF, eval) and the tiny offline
    model's build."""
    stages = t3rl_stages()
    stages["to_hf"] = {"kind": "convert_torch_dist_to_hf", "source": "train_stage1"}
    stages["eval"] = {"kind": "eval", "checkpoint": "to_hf"}
    tiny = {"prepare_data": {"kind": "prepare_data"}, "tiny": {"kind": "prepare_model"}}
    plans = []
    for name, run_config in (
        ("gpu", make_run(stages=stages)),
        ("tiny", make_run(stages=tiny, model="model/tiny_qwen3")),
    ):
        run_dir = tmp_path / name
        run_dir.mkdir()
        plan = build_plan(run_config, PlanContext(run_dir, tmp_path, "/t3rl", "/venv/bin/python", name, {}))
        assert run_pipeline(plan, RunDir(run_dir), DryExecutor()).status == "planned"
        plans.append(plan)
    return plans


def _written_by(script: str, path: str) -> bool:
    """`path`, or a directory above it, is named in `script` (as the command's output or its link)."""
    return any(re.search(re.escape(shlex.quote(p)) + r"(?![\w.-])", script) for p in _self_and_above(path))


def _self_and_above(path: str) -> list[str]:
    parts = Path(path).parts
    return [str(Path(*parts[:n])) for n in range(len(parts), 2, -1)]


def _marker_made(script: str, path: str, marker: str) -> bool:
    """The command makes `marker` inside `path` (touches it once whole, has Megatron save it there, or
    fails without it)."""
    inside = shlex.quote(f"{path}/{marker}")
    return bool(
        re.search(r"touch \S*/" + re.escape(marker) + r"\b", script)
        or f"test -f {inside}" in script
        or (marker == LATEST_CHECKPOINT and f"--save {shlex.quote(path)}" in script)
    )


def test_every_stage_kinds_declared_outputs_are_what_its_command_writes(tmp_path: Path) -> None:
    plans = _plans(tmp_path)
    assert {s.kind for plan in plans for s in plan.stages} == set(get_args(StageKind))
    for plan in plans:
        for s in plan.stages:
            script = (Path(plan.run_dir) / "stages" / s.name / "command.sh").read_text()
            assert s.verify, s.name
            for path, holds in s.verify.items():
                assert _written_by(script, path), (s.name, path)
                for marker in holds.markers:
                    assert _marker_made(script, path, marker), (s.name, path, marker)
    # An output may be declared as possibly empty only where no later stage reads it.
    for plan in plans:
        for s in plan.stages:
            for ref in s.inputs.values():
                producer = plan.stage(ref.stage)
                path = producer.outputs[ref.key]
                assert producer.verify.get(path, FILE) != MAY_BE_EMPTY, (s.name, ref)
    gpu, tiny = plans
    assert gpu.stage("train_stage1").verify == {
        gpu.stage("train_stage1").outputs["checkpoint"]: marked(LATEST_CHECKPOINT)
    }
    assert tiny.stage("tiny").verify == {tiny.stage("tiny").outputs["hf"]: marked(COMPLETE_MARKER)}
    assert group("curriculum/bfcl_stage1")["save_interval"]  # the train stage above saves checkpoints


# --- kind 2: a resume with another executor than the one that left a stage running -----------------


def test_a_stage_left_running_by_another_executor_is_not_run_beside_it(dirs: tuple[Path, Path]) -> None:  # noqa: F811
    run_dir, marks = dirs
    plan = Plan("test", run_dir, (stage("a", marks, f"[ -e {marks}/ok ]"),))
    assert run(plan, run_dir).status == "failed"
    state_file = run_dir / "state.json"
    state = json.loads(state_file.read_text())
    # The record names the executor kind that started it.
    assert state["stages"]["a"]["handle"]["executor"] == "local"
    # As a SLURM run whose launcher died leaves it: the job may still run.
    state["stages"]["a"].update(status="running", handle={"executor": "slurm", "slurm_job": "4242"})
    state_file.write_text(json.dumps(state))
    with pytest.raises(PipelineError) as refused:
        run(plan, run_dir)
    assert str(refused.value) == (
        "stage 'a' was left running by executor=slurm (SLURM job 4242) when the t3rl that ran it stopped, "
        "and executor=local cannot see or stop it: run here, the stage would run twice at once, writing one "
        f"output; resume it with the executor that started it: t3rl run --run-dir {run_dir} executor=slurm "
        "(nothing was started)"
    )
    assert count(marks, "a", "started") == 1
    # One that ended under SLURM (failed, stopped) is the local executor's to run again.
    state["stages"]["a"]["status"] = "failed"
    state_file.write_text(json.dumps(state))
    (marks / "ok").touch()
    assert run(plan, run_dir).status == "succeeded"


# --- kind 3: a run dir on a file system that keeps no locks (NFS without its lock service) ---------


def test_a_run_dir_where_no_lock_can_be_taken_is_one_line_naming_its_lock(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, marks = dirs

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    plan = Plan("test", run_dir, (stage("a", marks),))
    with pytest.raises(OSError) as raised:
        run(plan, run_dir)
    assert exit_code_for(raised.value, "run") == 1
    assert capsys.readouterr().err.strip() == (
        f"error: {run_dir}/.lock: No locks available (this file system keeps no file locks, as an NFS mount "
        "without its lock service does: choose a directory on one that does (paths.runs_dir=…; a run dir "
        "copied there resumes))"
    )
    assert count(marks, "a", "started") == 0
    # `t3rl runs` probes each run dir's lock: there it holds none, and the listing goes on.
    assert not is_locked(run_dir / ".lock")


# --- kind 4: a stage rerun for a changed command that writes the very output it had ----------------


class _Notes(SilentReporter):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, stage: Stage, text: str) -> None:
        self.notes.append(f"{stage.name}: {text}")


def test_a_stage_whose_command_changed_but_not_its_output_keeps_what_reads_it(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
) -> None:
    """Data prepared into another cache dir (a run dir resumed on another machine, `$T3RL_CACHE_DIR`
    changed): its command changed, its content did not, and what was made from it stays (was: every
    stage reading it ran again, a train stage from scratch with its checkpoint superseded)."""
    run_dir, marks = dirs
    data = run_dir / "stages" / "data" / "train.jsonl"

    def plan(cache: str, rows: str = "rows") -> Plan:
        write = f"cache={cache}; mkdir -p {data.parent} && echo {rows} > {data}"
        return Plan(
            "test",
            run_dir,
            (
                stage("data", marks, write, verify={str(data): FILE}),
                stage("eval", marks, f"cat {data} > {marks}/evaluated", reads=("data",)),
            ),
        )

    assert run(plan("/cache/a"), run_dir).status == "succeeded"
    reporter = _Notes()
    moved = run(plan("/cache/b"), run_dir, reporter=reporter)
    assert [(d.stage, d.action) for d in moved.decisions] == [("data", "run"), ("eval", "cached")]
    assert reporter.notes == [
        "eval: cached (unchanged since it succeeded): data wrote the same output it had before"
    ]
    assert [count(marks, name, "done") for name in ("data", "eval")] == [2, 1]
    # Other content is another output: what reads it runs again; so does --from, as asked.
    assert [d.action for d in run(plan("/cache/c", "other"), run_dir).decisions] == ["run", "run"]
    forced = run(plan("/cache/d", "other"), run_dir, from_stage="data")
    assert [d.action for d in forced.decisions] == ["run", "run"]
    assert [count(marks, name, "done") for name in ("data", "eval")] == [4, 3]


# --- kind 5: a copy of a run dir resumed while its original's stage still runs -------------------


def test_a_copied_run_dir_leaves_its_originals_running_stage_alone(tmp_path: Path) -> None:
    """`cp -r` of a run dir whose stage still runs (its launcher gone), then a resume of the copy: the
    copy's record names the original's execution (its process group, its run id), which writes into the
    original. It is left running, and the stage runs in the copy; a dir moved (no original left) still
    has its leftover stopped. Before, the copy's resume stopped the original run's stage."""
    original, copy, moved, marks = (tmp_path / name for name in ("run", "copy", "moved", "marks"))
    for folder in (original, marks):
        folder.mkdir()
    a = stage("a", marks)
    leftover = subprocess.Popen(
        ["sleep", "60"], start_new_session=True, env={**os.environ, STAGE_RUN_ENV: "execution1"}
    )
    try:
        record = StageRecord(
            "running",
            fingerprint(Plan("test", original, (a,)), a),
            "execution1",
            handle=_group_handle(leftover.pid),
        )
        RunDir(original).record(RunState(), "a", record)
        shutil.copytree(original, copy)
        reporter = _Notes()
        assert run(Plan("test", copy, (a,)), copy, reporter=reporter).status == "succeeded"
        assert reporter.notes == [
            f"a: left running for {original}, of which this run dir is a copy: not stopped"
        ]
        assert alive(leftover.pid) and count(marks, "a", "done") == 1
        shutil.move(original, moved)
        assert run(Plan("test", moved, (a,)), moved, grace=0.2).status == "succeeded"
        assert leftover.wait(timeout=10) is not None
    finally:
        if leftover.poll() is None:
            leftover.kill()
            leftover.wait()


# --- kind 6: a run dir on shared storage resumed from another host while its stage runs on the first -


def test_a_stage_left_running_on_another_host_is_not_run_beside_it(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
) -> None:
    """The launcher on node-a died with its stage still running there; `t3rl run --run-dir` of the same
    dir from this host could neither see nor stop that process group (its handle names node-a), and ran
    the stage a second time beside it. Refused now; --from names it as the user's word that it ended."""
    run_dir, marks = dirs
    plan = Plan("test", run_dir, (stage("a", marks),))
    there = {"executor": "local", "host": "node-a", "boot": 1.0, "pgid": 4242, "leader_start": 2.0}
    record = StageRecord("running", fingerprint(plan, plan.stages[0]), "x1", handle=there)
    RunDir(run_dir).record(RunState(), "a", record)
    with pytest.raises(PipelineError) as refused:
        run(plan, run_dir)
    assert str(refused.value) == (
        f"stage 'a' was left running on host node-a (process group 4242 on node-a) when the t3rl that ran it "
        f"stopped, and t3rl on {socket.gethostname()} cannot see or stop it: run here, the stage would run "
        "twice at once, writing one output; resume it on node-a (the same command there), or, once it runs "
        f"there no more, here: t3rl run --run-dir {run_dir} --from a (nothing was started)"
    )
    assert count(marks, "a", "started") == 0
    assert run(plan, run_dir, from_stage="a").status == "succeeded"


# --- kind 7: a run dir on NFS whose locks are this host's alone (nolock, local_lock) -----------------

_MOUNTS = (
    "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "40 22 0:50 / /shared rw,relatime shared:9 - nfs4 filer:/export rw,vers=4.2,hard,local_lock={lock}\n"
    "41 40 0:51 / /shared/my\\040runs rw - nfs filer:/runs rw,vers=3,{v3}\n"
)


@pytest.mark.parametrize(
    ("lock", "v3", "path", "mount"),
    [
        ("none", "lock", "/shared/x/run", None),  # NFSv4's own locks reach the server: other hosts see them
        ("flock", "lock", "/shared/x/run", "/shared"),
        ("all", "lock", "/shared", "/shared"),
        ("none", "nolock", "/shared/my runs/rec/1", "/shared/my runs"),  # the deepest mount decides
        ("none", "lock", "/shared/my runs/rec/1", None),
        ("flock", "lock", "/home/me/runs", None),  # a local disk: one host
        ("flock", "lock", "/sharedother/run", None),  # a name that only starts like the mount
    ],
)
def test_a_mount_whose_locks_are_this_hosts_alone_is_named(
    lock: str, v3: str, path: str, mount: str | None
) -> None:
    """On such a mount a run dir's lock keeps no launcher of another host out: `t3rl run` says so (a
    warning line) instead of promising one launcher per dir."""
    assert host_local_locks(Path(path), _MOUNTS.format(lock=lock, v3=v3)) == mount


# --- kind 8: a SLURM job preempted and not requeued ---------------------------------------------


class _Job:
    """A submitit job as the SLURM executor watches it: its states in turn, then done."""

    def __init__(self, states: list[str], done_after: int | None) -> None:
        self.states, self.polls, self.done_after = states, 0, done_after

    def done(self) -> bool:
        self.polls += 1
        assert self.polls < 50, "watched on forever"
        return self.done_after is not None and self.polls > self.done_after

    @property
    def state(self) -> str:
        return self.states[min(self.polls, len(self.states)) - 1]

    def result(self) -> None:
        return None


def test_a_slurm_job_preempted_and_not_requeued_ends_the_stage(tmp_path: Path) -> None:
    """submitit counts PREEMPTED as running: a job preempted and never requeued was waited on forever,
    and a resume re-attached to it. It ends the stage once it stays PREEMPTED past the grace, and a resume
    submits it again; a job SLURM requeues (PENDING again) is watched on to its end."""
    executor = SlurmExecutor(SlurmExecutorConfig(), out=io.StringIO())
    executor.poll_s = 0.0
    log = tmp_path / "log.txt"
    requeued = _Job(["RUNNING", "PREEMPTED", "PENDING", "RUNNING"], done_after=4)
    assert executor._watch(requeued, log) == "COMPLETED"
    executor.preempted_grace_s = 0.0
    assert executor._watch(_Job(["RUNNING", "PREEMPTED"], done_after=None), log) == "PREEMPTED"
    assert "PREEMPTED" not in ACTIVE  # a resume submits such a job again, never re-attaches to it


# --- kind 9: a SLURM job that ended TIMEOUT / OUT_OF_MEMORY / NODE_FAIL --------------------------


@pytest.mark.parametrize(
    ("state", "meaning"),
    [
        (
            "TIMEOUT",
            "its time limit, executor.time_limit=24:00:00, was reached: raise it, e.g. `t3rl run --run-dir "
            "{run} executor.time_limit=48:00:00` (a train stage continues from its last checkpoint)",
        ),
        (
            "OUT_OF_MEMORY",
            "a process of it ran out of the memory SLURM gave it: ask for all of each node's with "
            "`t3rl run --run-dir {run} 'executor.extra_sbatch=[--mem=0]'`",
        ),
        ("PREEMPTED", "preempted and not requeued: `t3rl run --run-dir {run}` submits it again"),
    ],
)
def test_a_slurm_jobs_end_is_recorded_with_its_meaning_and_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, state: str, meaning: str
) -> None:
    """`SLURM job N ended TIMEOUT` named neither the key that sets the limit nor the override that raises
    it; each end SLURM gives a cause now says what it means and the command that goes on."""
    executor = SlurmExecutor(SlurmExecutorConfig(), out=io.StringIO())
    monkeypatch.setattr(
        executor, "_attach_or_submit", lambda *args: (SlurmRecord("77", 1, "f", "s", 0.0), None)
    )
    monkeypatch.setattr(executor, "_watch", lambda handle, log: state)
    run_dir = tmp_path / "run"
    a = stage("a", tmp_path)
    stage_dir = run_dir / "stages" / "a"
    stage_dir.mkdir(parents=True)
    context = StageContext(
        run_dir, stage_dir, stage_dir / "command.sh", stage_dir / "log.txt", 1, Plan("t", run_dir, (a,))
    )
    result = executor.run_stage(a, context)
    assert (result.status, result.message) == (
        "failed",
        f"SLURM job 77 ended {state} ({meaning.format(run=run_dir)}); see {stage_dir / 'log.txt'}",
    )
    # Each fix it names validates as the override it is.
    assert SlurmExecutorConfig(time_limit="48:00:00", extra_sbatch=["--mem=0"])


# --- kind 10: the launcher and a SLURM job writing one log file --------------------------------------


def test_a_reattached_slurm_job_has_its_log_to_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume that re-attaches to a running SLURM job wrote its header into the log the job appends to
    from its node: two hosts appending to one file on shared storage, whose appends NFS does not keep
    apart. The header is the launcher's only before it submits the job."""
    import submitit

    executor = SlurmExecutor(SlurmExecutorConfig(), out=io.StringIO())
    run_dir = tmp_path / "run"
    a = stage("a", tmp_path)
    stage_dir = run_dir / "stages" / "a"
    stage_dir.mkdir(parents=True)
    log = stage_dir / "log.txt"
    log.write_text("the job's own lines\n")
    write_record(stage_dir / "slurm_job.json", SlurmRecord("77", 1, str(tmp_path / "f"), "s", 0.0))
    monkeypatch.setattr(submitit, "SlurmJob", lambda folder, job_id: _Job(["RUNNING"], done_after=0))
    monkeypatch.setattr("launch.run.executors.slurm._state", lambda handle: "RUNNING")
    context = StageContext(run_dir, stage_dir, stage_dir / "command.sh", log, 2, Plan("t", run_dir, (a,)))
    assert executor.run_stage(a, context).status == "succeeded"
    assert log.read_text() == "the job's own lines\n"
