"""Launcher kinds of round ten, each a record that disagreed with what happened:

- a run stopped between stages (the reader of its output gone after a stage's line, Ctrl-C while an
  output was hashed or the record written) showed `planned` in `t3rl runs` and `runs show`: no stage's
  record said anything had stopped. The pipeline keeps its own record in state.json (`pipeline`:
  running, then how it ended), so a stop at ANY step of the pipeline reads as `stopped` (a property
  over every step), and a launcher killed outright reads as `interrupted`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from launch.cli.runs import load_run, show_run
from launch.plan.build import Plan
from launch.run import pipeline
from launch.run.output_digest import FileHashes
from launch.run.rundir import RunDir
from tests.launch.pipeline_helpers import count, run, three_stage_plan

# ------------------------------------------- a stop at any step of the pipeline is recorded as a stop


class _Stop(Exception):
    """Raised by the injector at the chosen step (replaced by the kind under test)."""


class _Reporter(pipeline.SilentReporter):
    pass


# Every step the pipeline takes outside a stage's own command: the reporter's lines (the reader of
# t3rl's output may go away at any of them) and each write of the record (Ctrl-C may land in any).
_STEPS: tuple[tuple[Any, str], ...] = (
    (_Reporter, "decisions"),
    (_Reporter, "stage_started"),
    (_Reporter, "stage_finished"),
    (_Reporter, "note"),
    (RunDir, "record"),
    (RunDir, "save_state"),
    (RunDir, "write_files"),
    (RunDir, "write_stage_command"),
    (RunDir, "write_stage_outputs"),
    (RunDir, "pipeline_started"),
    (RunDir, "pipeline_ended"),
    (FileHashes, "save"),
    (pipeline, "_check_outputs"),
    (pipeline, "digests"),
)


@contextmanager
def _stop_at(
    monkeypatch: pytest.MonkeyPatch, step: int, make: Callable[[], BaseException]
) -> Iterator[list[str]]:
    """Raise `make()` at the `step`-th call of any of _STEPS (once); yields the steps called."""
    calls: list[str] = []
    with monkeypatch.context() as patch:
        for owner, name in _STEPS:
            original = getattr(owner, name)

            def wrapped(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
                calls.append(_name)
                if len(calls) == step:
                    raise make()
                return _original(*args, **kwargs)

            patch.setattr(owner, name, wrapped)
        yield calls


def _config(run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"stages": {"a": {}, "b": {}, "c": {}}}))


@pytest.mark.parametrize(
    "make",
    [KeyboardInterrupt, lambda: BrokenPipeError(32, "Broken pipe")],
    ids=["ctrl-c", "reader-gone"],
)
def test_a_run_stopped_at_any_step_reads_as_stopped_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[], BaseException]
) -> None:
    """Before: stopped in the reporter's line after stage a (outside the stage's try), or in its outputs'
    hashing, the run showed `planned` (a done, b and c never started)."""
    step, seen = 0, []
    while True:
        step += 1
        run_dir, marks = tmp_path / f"run{step}", tmp_path / f"marks{step}"
        marks.mkdir()
        _config(run_dir)
        plan = three_stage_plan(run_dir, marks)
        with _stop_at(monkeypatch, step, make) as calls:
            try:
                run(plan, run_dir, reporter=_Reporter())
            except (KeyboardInterrupt, BrokenPipeError):
                stopped = True
            else:
                stopped = False
        if not stopped:
            break
        seen.append(calls[step - 1])
        view = load_run(run_dir)
        started = (run_dir / "state.json").exists()
        # Stopped before it wrote anything (its first line): nothing ran, nothing is claimed.
        assert view.status == ("stopped" if started else "planned"), (step, calls[step - 1], view)
        if started:
            out = io.StringIO()
            show_run(run_dir, Console(file=out, width=300))
            assert "ended" in out.getvalue() and "stopped" in out.getvalue(), out.getvalue()
        # and the run resumes to the end from wherever it stopped
        assert run(plan, run_dir).status == "succeeded", step  # type: ignore[attr-defined]
        assert load_run(run_dir).status == "succeeded", step
        assert all(count(marks, name, "done") >= 1 for name in "abc"), step
    # every kind of step was hit, and the known one: the line after a stage finished
    assert {name for _, name in _STEPS if name != "note"} <= set(seen), set(seen)


def test_a_launcher_killed_between_stages_reads_as_interrupted(tmp_path: Path) -> None:
    """A launcher killed outright (SIGKILL) records nothing: its pipeline's `running` with no t3rl holding
    the dir is `interrupted`, as a stage's is (before: `planned`)."""
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    marks.mkdir()
    _config(run_dir)
    plan = three_stage_plan(run_dir, marks)
    rundir = RunDir(run_dir)
    state = rundir.load_state()
    run(Plan("test", run_dir, plan.stages[:1]), run_dir)  # a done
    state = rundir.load_state()
    rundir.pipeline_started(state)  # then the launcher died before b started
    assert load_run(run_dir).status == "interrupted"
