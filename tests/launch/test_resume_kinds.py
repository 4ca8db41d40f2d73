"""Resume after the launcher dies anywhere: SIGKILL at every step the pipeline takes between and after
stages, then `run` again. Nothing is lost, a command that finished is never run again, and nothing
half-written is taken for complete. Also: two launchers on one run dir, a read-only run dir.

Each kill happens in a forked copy of this test process (no interpreter start per case): the copy runs
the pipeline and SIGKILLs itself at the n-th step; the parent then resumes in the same run dir.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from pipeline_helpers import alive, count, run, stage
from typer.testing import CliRunner

from launch.cli.app import app
from launch.plan.build import Plan
from launch.run import pipeline
from launch.run.executors.local import LocalExecutor
from launch.run.pipeline import PipelineError
from launch.run.rundir import RunDir
from t3rl_core import atomic_files
from tests.support.lock_holder import held_by_another_process
from tests.support.retool_prepare_only import EXPERIMENT


def _plan(run_dir: Path, marks: Path) -> Plan:
    """a → b, each writing one declared output (b's reads a's)."""
    out_a, out_b = run_dir / "stages" / "a" / "out.txt", run_dir / "stages" / "b" / "out.txt"
    return Plan(
        "test",
        run_dir,
        (
            stage("a", marks, f"mkdir -p {out_a.parent} && echo a > {out_a}", verify=(str(out_a),)),
            stage(
                "b", marks, f"cat {out_a} > {out_b} && echo b >> {out_b}", reads=("a",), verify=(str(out_b),)
            ),
        ),
    )


# The steps the launcher takes around stages: a kill lands before each one's n-th call.
_STEPS: list[tuple[Any, str]] = [
    (RunDir, "record"),
    (RunDir, "write_stage_outputs"),
    (RunDir, "write_stage_command"),
    (pipeline, "digests"),
    (pipeline.FileHashes, "save"),
    (LocalExecutor, "_stop_group"),
]


def _killed_at(step: int, body: Callable[[], object]) -> bool:
    """Run `body` in a forked copy of this process that SIGKILLs itself on entering the `step`-th
    launcher step; whether it was killed (False: `body` finished before that step)."""
    pid = os.fork()
    if pid == 0:  # the copy: never returns to pytest
        try:
            seen = [0]
            for owner, name in _STEPS:
                original = getattr(owner, name)

                def wrapped(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                    seen[0] += 1
                    if seen[0] == step:
                        os.kill(os.getpid(), signal.SIGKILL)
                    return _original(*args, **kwargs)

                setattr(owner, name, wrapped)
            body()
        finally:
            sys.stdout.flush()
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def _wait_for_orphans(run_dir: Path) -> None:
    """Until no process works in `run_dir` (a killed launcher's stage finishing on its own)."""
    deadline = time.monotonic() + 60
    while any(_works_in(process, run_dir) for process in psutil.process_iter()):
        assert time.monotonic() < deadline, "a stage of the killed launcher never ended"
        time.sleep(0.02)


def _works_in(process: psutil.Process, run_dir: Path) -> bool:
    try:
        return Path(process.cwd()).is_relative_to(run_dir)
    except (psutil.Error, OSError):
        return False


@pytest.fixture
def dirs(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    yield run_dir, marks


def test_a_launcher_killed_at_any_step_resumes_without_running_a_finished_command_again(dirs):
    """For every n: kill at the launcher's n-th step, resume. Each stage's command completes exactly
    once over both runs (one killed before it started runs in the resume), both outputs are whole,
    and the resumed record is the same as an uninterrupted run's."""
    step = 1
    while True:
        run_dir, marks = dirs[0] / f"n{step}", dirs[1] / f"n{step}"
        run_dir.mkdir()
        marks.mkdir()
        plan = _plan(run_dir, marks)
        if not _killed_at(step, lambda plan=plan, run_dir=run_dir: run(plan, run_dir)):
            break  # the whole run takes fewer steps: every kill point was tried
        _wait_for_orphans(run_dir)
        result = run(_plan(run_dir, marks), run_dir)
        assert result.status == "succeeded", (step, result)
        assert [count(marks, name, "done") for name in "ab"] == [1, 1], f"killed at step {step}"
        assert (run_dir / "stages" / "b" / "out.txt").read_text() == "a\nb\n"
        state = json.loads((run_dir / "state.json").read_text())["stages"]
        assert {name: rec["status"] for name, rec in state.items()} == {"a": "succeeded", "b": "succeeded"}
        assert all(None not in rec["outputs"].values() and rec["outputs"] for rec in state.values()), step
        again = run(_plan(run_dir, marks), run_dir)
        assert [d.action for d in again.decisions] == ["cached", "cached"], step
        step += 1
    assert step > 10, "the run should take a dozen launcher steps"


def test_a_second_launcher_on_the_same_run_dir_names_the_first(dirs):
    """The refused launcher names the holder's pid (read from the kernel's lock table: the lock file
    itself is never written) and starts nothing."""
    run_dir, marks = dirs
    with held_by_another_process(run_dir / ".lock") as holder, pytest.raises(PipelineError) as refused:
        run(_plan(run_dir, marks), run_dir)
    assert f"in use by another t3rl process (pid {holder})" in str(refused.value), refused.value
    assert count(marks, "a", "started") == 0
    assert run(_plan(run_dir, marks), run_dir).status == "succeeded"


def test_a_stage_left_running_before_its_process_group_was_recorded_is_stopped_before_it_runs_again(dirs):
    """The launcher dies right after starting a stage, before it recorded the stage's process group:
    the resume finds the orphan by its execution's id and stops it, so the stage never runs twice at
    once."""
    run_dir, marks = dirs
    (marks / "sleep").write_text("30")
    # The duration is read before the pid is written: the test sets it to 0 for the resume once the pid is
    # there, which a shell reading it after (as the sleep line ran) took for its own, ending at once.
    body = f"duration=$(cat {marks}/sleep)\necho $$ > {marks}/a.pid\nsleep $duration"
    plan = Plan("test", run_dir, (stage("a", marks, body),))
    pid = os.fork()
    if pid == 0:  # the launcher, SIGKILLed as it records the started stage's group
        try:
            original = RunDir.record

            def record(self: RunDir, state: Any, name: str, rec: Any) -> None:
                if rec.handle:
                    os.kill(os.getpid(), signal.SIGKILL)
                original(self, state, name, rec)

            RunDir.record = record  # type: ignore[method-assign]
            run(plan, run_dir)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 60
    while not (marks / "a.pid").exists() or not (marks / "a.pid").read_text().endswith("\n"):
        assert time.monotonic() < deadline, "the stage never started"
        time.sleep(0.02)
    orphan = int((marks / "a.pid").read_text())
    assert alive(orphan)
    assert json.loads((run_dir / "state.json").read_text())["stages"]["a"]["handle"] == {}

    (marks / "sleep").write_text("0")
    assert run(plan, run_dir, grace=0.5).status == "succeeded"
    assert not alive(orphan), "the resume ran the stage while the orphan still ran"
    assert (count(marks, "a", "started"), count(marks, "a", "done")) == (2, 1)


def test_a_config_file_edited_between_attempts_is_named_by_key_and_file_on_resume(tmp_path, monkeypatch):
    """No override given on the resume, but the experiment's file changed: the resume says which key
    changed and which file sets it now, before the stage that reads it runs again."""
    monkeypatch.chdir(tmp_path)
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR"):
        monkeypatch.delenv(name, raising=False)
    experiment = tmp_path / "conf" / "experiment" / "rec.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(EXPERIMENT)
    first = CliRunner().invoke(app, ["run", "+experiment=rec", "--config-dir", str(tmp_path / "conf")])
    assert first.exit_code == 0, first.output
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()
    experiment.write_text(EXPERIMENT.replace("test_size: 4", "test_size: 3"))

    resumed = CliRunner().invoke(app, ["run", "--run-dir", str(run_dir)], env={"COLUMNS": "300"})
    assert resumed.exit_code == 0, resumed.output
    out = " ".join(resumed.output.split())
    assert "env.data.test_size: 4 → 3 (set in: conf/experiment/rec.yaml" in out, out
    assert (run_dir / "superseded" / "config.1.yaml").exists()


def test_a_full_disk_while_a_finished_stage_is_recorded_names_the_file_and_resumes_without_rerunning(
    dirs, monkeypatch
):
    """The disk fills as t3rl records a stage that ended (state.json cannot be written): the error
    names the file and the disk, state.json stays whole, and once space is back the resume records the
    stage from its outputs instead of running it again."""
    run_dir, marks = dirs
    plan = Plan("test", run_dir, _plan(run_dir, marks).stages[:1])
    original = atomic_files.tempfile.mkstemp

    def full_once_ended(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, tmp = original(*args, **kwargs)
        # The stage's own exit record, not its last mark: on a busy machine the stage may end before
        # t3rl records its handle, and that record must then be the one that fails.
        if Path(tmp).name.startswith(".state.json.") and pipeline.exit_file(run_dir, "a").exists():
            os.close(fd)
            return os.open("/dev/full", os.O_WRONLY), tmp  # every write: ENOSPC, as on a full disk
        return fd, tmp

    monkeypatch.setattr(atomic_files.tempfile, "mkstemp", full_once_ended)
    with pytest.raises(OSError) as full:
        run(plan, run_dir)
    assert full.value.errno == errno.ENOSPC
    assert full.value.filename == str(run_dir / "state.json"), full.value
    state = json.loads((run_dir / "state.json").read_text())  # the last whole state
    assert state["stages"]["a"]["status"] == "running"
    assert not [p.name for p in run_dir.iterdir() if p.name.endswith(".tmp")]

    monkeypatch.undo()
    result = run(plan, run_dir)
    assert result.status == "succeeded"
    assert [d.action for d in result.decisions] == ["finish"]
    assert (count(marks, "a", "started"), count(marks, "a", "done")) == (1, 1)
