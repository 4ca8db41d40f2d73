"""Resumable pipeline: skip what is done, rerun what changed and everything after, survive kills."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pipeline_helpers import alive, count, run, stage, three_stage_plan

from launch.plan.build import Plan
from launch.run.pipeline import PipelineError, decide, run_pipeline
from launch.run.rundir import RunDir

HELPERS = Path(__file__).with_name("pipeline_helpers.py")


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    return run_dir, marks


def statuses(run_dir: Path) -> dict[str, str]:
    state = json.loads((run_dir / "state.json").read_text())
    return {name: rec["status"] for name, rec in state["stages"].items()}


def test_runs_every_stage_once_then_skips_them_all(dirs):
    run_dir, marks = dirs
    plan = three_stage_plan(run_dir, marks)
    assert run(plan, run_dir).status == "succeeded"
    second = run(plan, run_dir)
    assert [d.action for d in second.decisions] == ["cached"] * 3
    assert [count(marks, n, "started") for n in "abc"] == [1, 1, 1]
    assert statuses(run_dir) == {"a": "succeeded", "b": "succeeded", "c": "succeeded"}
    for name in "abc":
        command = (run_dir / "stages" / name / "command.sh").read_text()
        assert f"{marks}/{name}.done" in command
        assert (run_dir / "stages" / name / "status.json").exists()
        assert (run_dir / "stages" / name / "log.txt").exists()


def test_sigkill_mid_stage_resumes_and_completes_each_stage_exactly_once(dirs):
    run_dir, marks = dirs
    # Stage b records its pid, then sleeps as long as b.sleep says (the command itself never changes,
    # so that the second run resumes it instead of superseding it). The duration is read before the pid
    # is written: the test sets it to 0 for the resume once the pid is there, which a shell descheduled
    # between the two lines read as its own, so the killed launcher's stage ended (and recorded its exit)
    # before the resume, which then rightly finished the stage instead of resuming it.
    (marks / "b.sleep").write_text("30")
    middle = f"duration=$(cat {marks}/b.sleep)\necho $$ > {marks}/b.pid\nsleep $duration"
    search_path = os.pathsep.join([str(HELPERS.parent), os.environ.get("PYTHONPATH", "")])
    child = subprocess.Popen(
        [sys.executable, str(HELPERS), str(run_dir), str(marks), middle],
        # The helpers' folder first, then the caller's path (the checkout under test).
        env={**os.environ, "PYTHONPATH": search_path},
    )
    deadline = time.monotonic() + 120  # a failure guard: an interpreter, stage a and b's start
    # Wait for the whole pid line: the shell may have created the file but not written it yet.
    while not (marks / "b.pid").exists() or not (marks / "b.pid").read_text().endswith("\n"):
        assert time.monotonic() < deadline, "stage b never started"
        assert child.poll() is None, "the pipeline process ended early"
        time.sleep(0.05)
    # ... and for the launcher to have recorded the stage's process group (killed before that, it
    # cannot know what to stop; the window is the few lines after Popen).
    while not json.loads((run_dir / "state.json").read_text())["stages"]["b"].get("handle"):
        assert time.monotonic() < deadline, "stage b's process group was never recorded"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    orphan = int((marks / "b.pid").read_text())
    assert alive(orphan), "the killed pipeline's stage should still be running before the resume"
    assert statuses(run_dir) == {"a": "succeeded", "b": "running"}

    (marks / "b.sleep").write_text("0")
    plan = three_stage_plan(run_dir, marks, middle)
    assert [d.action for d in decide(plan, RunDir(run_dir).load_state())] == ["cached", "resume", "run"]
    result = run(plan, run_dir, grace=0.5)
    assert result.status == "succeeded"
    assert not alive(orphan), "the resume must stop the orphaned stage before running it again"
    assert [count(marks, n, "started") for n in "abc"] == [1, 2, 1]
    assert [count(marks, n, "done") for n in "abc"] == [1, 1, 1]
    assert statuses(run_dir) == {"a": "succeeded", "b": "succeeded", "c": "succeeded"}
    record = json.loads((run_dir / "state.json").read_text())["stages"]["b"]
    assert record["attempts"] == 2


def test_changed_command_reruns_it_and_everything_after_and_keeps_the_old_output(dirs):
    run_dir, marks = dirs
    run(three_stage_plan(run_dir, marks), run_dir)
    (run_dir / "stages" / "b" / "result.txt").write_text("old output")
    result = run(three_stage_plan(run_dir, marks, middle="echo changed"), run_dir)
    assert [(d.action, d.supersede) for d in result.decisions] == [
        ("cached", False),
        ("run", True),
        ("run", True),
    ]
    assert "changed" in result.decisions[1].reason
    assert "upstream ran again: b" in result.decisions[2].reason
    assert [count(marks, n, "done") for n in "abc"] == [1, 2, 2]
    assert (run_dir / "superseded" / "b.1" / "result.txt").read_text() == "old output"
    assert not (run_dir / "stages" / "b" / "result.txt").exists()


def test_from_reruns_that_stage_and_the_rest(dirs):
    run_dir, marks = dirs
    run(three_stage_plan(run_dir, marks), run_dir)
    result = run(three_stage_plan(run_dir, marks), run_dir, from_stage="b")
    assert [d.action for d in result.decisions] == ["outside", "run", "run"]
    assert [count(marks, n, "done") for n in "abc"] == [1, 2, 2]


def test_only_runs_one_stage_and_a_later_full_run_catches_up(dirs):
    run_dir, marks = dirs
    run(three_stage_plan(run_dir, marks), run_dir)
    result = run(three_stage_plan(run_dir, marks), run_dir, only="b")
    assert [d.action for d in result.decisions] == ["outside", "run", "outside"]
    assert [count(marks, n, "done") for n in "abc"] == [1, 2, 1]
    # c was built on the old b: the next plain run redoes c only.
    result = run(three_stage_plan(run_dir, marks), run_dir)
    assert [d.action for d in result.decisions] == ["cached", "cached", "run"]
    assert [count(marks, n, "done") for n in "abc"] == [1, 2, 2]


def test_selection_needs_earlier_stages_to_have_succeeded(dirs):
    run_dir, marks = dirs
    with pytest.raises(PipelineError, match="needs the outputs of a"):
        run(three_stage_plan(run_dir, marks), run_dir, only="b")
    with pytest.raises(PipelineError, match="--from nope: no such stage"):
        run(three_stage_plan(run_dir, marks), run_dir, from_stage="nope")
    assert count(marks, "b", "started") == 0


def test_failing_stage_stops_the_pipeline_and_is_retried_in_place(dirs):
    run_dir, marks = dirs
    (marks / "b.code").write_text("3")
    middle = f"exit $(cat {marks}/b.code)"
    result = run(three_stage_plan(run_dir, marks, middle), run_dir)
    assert result.status == "failed" and result.failed_stage == "b"
    assert result.results["b"].returncode == 3
    assert statuses(run_dir) == {"a": "succeeded", "b": "failed"}
    assert count(marks, "c", "started") == 0
    (marks / "b.code").write_text("0")
    result = run(three_stage_plan(run_dir, marks, middle), run_dir)
    assert [d.action for d in result.decisions] == ["cached", "resume", "run"]
    assert result.status == "succeeded"
    log = (run_dir / "stages" / "b" / "log.txt").read_text()
    assert "attempt 1" in log and "attempt 2" in log


def test_complete_output_is_adopted_without_running(dirs, tmp_path):
    run_dir, marks = dirs
    cache = tmp_path / "cache" / "model_torch_dist"
    cache.mkdir(parents=True)
    (cache / "latest_checkpointed_iteration.txt").write_text("release")
    convert = stage(
        "convert", marks, reads=("a",), complete_when=(str(cache / "latest_checkpointed_iteration.txt"),)
    )
    plan = Plan("test", run_dir, (stage("a", marks), convert, stage("c", marks, reads=("convert",))))
    result = run(plan, run_dir)
    assert [d.action for d in result.decisions] == ["run", "complete", "run"]
    assert count(marks, "convert", "started") == 0
    assert statuses(run_dir)["convert"] == "skipped"
    assert [d.action for d in run(plan, run_dir).decisions] == ["cached"] * 3
    # An output that disappears is rebuilt, and what follows it too.
    (cache / "latest_checkpointed_iteration.txt").unlink()
    assert [d.action for d in run(plan, run_dir).decisions] == ["cached", "run", "run"]
    assert count(marks, "convert", "done") == 1


def test_complete_markers_inside_a_superseded_stage_dir_do_not_count(dirs):
    run_dir, marks = dirs
    inside = run_dir / "stages" / "b" / "hf" / ".t3rl-complete"
    b = stage("b", marks, f"mkdir -p {inside.parent} && touch {inside}", reads=("a",))._replace(
        complete_when=(str(inside),)
    )
    plan = Plan("test", run_dir, (stage("a", marks), b))
    run(plan, run_dir)
    assert inside.exists()
    changed = Plan("test", run_dir, (stage("a", marks, "echo new input"), b))
    result = run(changed, run_dir)
    assert [d.action for d in result.decisions] == ["run", "run"]
    assert count(marks, "b", "done") == 2


@pytest.mark.parametrize(
    "content",
    ['{"version": 1, "stages": {"a": {"status": "succe', "not json at all", '{"version": 99, "stages": {}}'],
    ids=["half-written", "garbage", "other-version"],
)
def test_corrupt_state_is_reported_never_taken_as_fresh(dirs, content):
    run_dir, marks = dirs
    (run_dir / "state.json").write_text(content)
    with pytest.raises(PipelineError, match=r"state\.json"):
        run(three_stage_plan(run_dir, marks), run_dir)
    assert count(marks, "a", "started") == 0
    assert (run_dir / "state.json").read_text() == content


def test_one_pipeline_per_run_dir(dirs):
    import fcntl

    run_dir, marks = dirs
    with (run_dir / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        with pytest.raises(PipelineError, match="in use"):
            run(three_stage_plan(run_dir, marks), run_dir)


def test_dry_executor_writes_commands_and_records_nothing(dirs):
    from launch.run.executors.dry import DryExecutor

    run_dir, marks = dirs
    result = run_pipeline(three_stage_plan(run_dir, marks), RunDir(run_dir), DryExecutor())
    assert result.status == "planned"
    assert not (run_dir / "state.json").exists()
    assert (run_dir / "stages" / "b" / "command.sh").exists()
    assert count(marks, "a", "started") == 0
