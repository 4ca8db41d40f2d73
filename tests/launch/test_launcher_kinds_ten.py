"""Launcher kinds of round ten, each a record that disagreed with what happened:

- a run stopped between stages (the reader of its output gone after a stage's line, Ctrl-C while an
  output was hashed or the record written) showed `planned` in `t3rl runs` and `runs show`: no stage's
  record said anything had stopped. The pipeline keeps its own record in state.json (`pipeline`:
  running, then how it ended), so a stop at ANY step of the pipeline reads as `stopped` (a property
  over every step), and a launcher killed outright reads as `interrupted`.
- a sweep run again with a value more in a swept list (`seed=1,2`, then `seed=1,2,3`) started a second
  sweep and ran every point again. It extends the sweep it grew from (launch.run.sweep_extend): the new
  point runs, the earlier ones keep their index and run dir and run only what changed since (nothing,
  here), one sweep.json/sweep.md holds them all. The same points again, a point dropped or another
  fixed override start a new sweep, as before.
- a run's W&B tracker opened before the run's record was written: a first attempt's config had no
  manifest, a resume's the previous attempt's. It opens right after the record (tracking.DeferredTracking),
  and a command refused before its record opens none.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from launch.cli.app import app
from launch.cli.runs import load_run, show_run
from launch.files import exclusive_lock
from launch.plan.build import Plan
from launch.run import pipeline
from launch.run.output_digest import FileHashes
from launch.run.rundir import RunDir
from tests.launch.pipeline_helpers import count, run, three_stage_plan
from tests.support.retool_prepare_only import rec_config_dir

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


# ------------------------------------------- a swept list extended extends its sweep


@pytest.fixture
def conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return rec_config_dir(tmp_path, monkeypatch)


def _sweep(conf: Path, *swept: str) -> Any:
    result = CliRunner().invoke(
        app, ["run", "-m", "+experiment=rec", *swept, "--config-dir", str(conf)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    return result


def _points(sweep: Path) -> dict[str, dict[str, Any]]:
    return {" ".join(p["varying"]): p for p in json.loads((sweep / "sweep.json").read_text())["points"]}


def _data_run_id(point: Path) -> str:
    return json.loads((point / "state.json").read_text())["stages"]["prepare_data"]["run_id"]


def test_a_swept_list_with_a_value_more_runs_only_the_new_point_in_the_same_sweep(conf: Path, tmp_path: Path):
    """Before: the second command made a second sweep dir and ran all three points again."""
    _sweep(conf, "seed=1,2")
    (sweep,) = (tmp_path / "runs" / "rec").iterdir()
    before = {label: _data_run_id(Path(p["run_dir"])) for label, p in _points(sweep).items()}
    # the new value anywhere in the list: the earlier points keep their indexes and run dirs
    result = _sweep(conf, "seed=3,1,2")
    assert [d.name for d in (tmp_path / "runs" / "rec").iterdir()] == [sweep.name], result.output
    points = _points(sweep)
    assert {label: p["index"] for label, p in points.items()} == {"seed=1": 0, "seed=2": 1, "seed=3": 2}
    assert all(p["status"] == "succeeded" for p in points.values()), points
    # the earlier points ran nothing (cached), the new one ran
    assert {label: _data_run_id(sweep / f"p{i:02d}") for label, i in (("seed=1", 0), ("seed=2", 1))} == before
    assert (sweep / "p02" / "state.json").exists() and "extending" in result.output, result.output
    md = (sweep / "sweep.md").read_text()
    assert all(f"| {i} | seed=" in md for i in range(3)), md


def test_a_sweep_that_is_no_extension_starts_a_new_sweep(conf: Path, tmp_path: Path):
    """Each command after one first sweep (one sweep run for the three: ~1 s of CPU each): none grows
    the first sweep, nor any sweep an earlier one of them started (the same points, a point dropped,
    another fixed override)."""
    _sweep(conf, "seed=1,2")
    (first,) = (tmp_path / "runs" / "rec").iterdir()
    points = _points(first)
    seconds = [("seed=1,2",), ("seed=1,3",), ("seed=1,2,3", "env.data.test_size=3")]
    for sweeps, second in enumerate(seconds, 2):
        _sweep(conf, *second)
        assert len(list((tmp_path / "runs" / "rec").iterdir())) == sweeps, second
        assert _points(first) == points, second


# ------------------------------------------- every attempt's tracker config holds its own manifest


def test_every_attempts_tracker_opens_with_the_manifest_that_attempt_wrote(
    conf: Path, tmp_path: Path, monkeypatch
):
    """Before: the tracker opened before the run's record was written, so a first attempt's W&B config
    had an empty manifest and a resume's the previous attempt's."""
    opened: list[dict[str, Any]] = []

    def open_tracker(tracking: Any, **kwargs: Any) -> None:
        opened.append(dict(kwargs["manifest"]))

    monkeypatch.setattr("launch.plan.tracking.open_tracker", open_tracker)
    invoke = CliRunner().invoke
    assert invoke(app, ["run", "+experiment=rec", "--config-dir", str(conf)]).exit_code == 0
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()
    first = json.loads((run_dir / "manifest.json").read_text())
    assert invoke(app, ["run", "--run-dir", str(run_dir), "seed=7"]).exit_code == 0
    second = json.loads((run_dir / "manifest.json").read_text())
    assert first != second and opened == [first, second], opened
    # a command refused before its record (the run dir in use) opens no tracker run
    with exclusive_lock(run_dir / ".lock"):
        assert invoke(app, ["run", "--run-dir", str(run_dir)]).exit_code == 1
    assert len(opened) == 2


def test_a_run_opens_a_real_offline_wandb_run_whose_config_holds_the_manifest(
    conf: Path, tmp_path, monkeypatch
):
    """The same through wandb itself (offline, no network): the run's config as wandb recorded it."""
    import wandb

    captured: list[dict[str, Any]] = []
    init = wandb.init

    def recording_init(*args: Any, **kwargs: Any) -> Any:
        captured.append(kwargs["config"])
        return init(*args, **kwargs)

    monkeypatch.setattr(wandb, "init", recording_init)
    monkeypatch.setenv("WANDB_SILENT", "true")
    result = CliRunner().invoke(
        app,
        ["run", "+experiment=rec", "--config-dir", str(conf), "tracking=wandb", "tracking.mode=offline"],
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs" / "rec").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert len(captured) == 1 and captured[0]["manifest"]["run_id"] == manifest["run_id"], captured
    assert captured[0]["manifest"]["git"] == manifest["git"]
