"""Every file of a run's record is written through one durable writer (`launch.files.write_record`):
its temporary file fsynced before it is renamed over the record, and its directory fsynced after. The
declaration is `launch.run.record_files` (RECORD_FILES, STAGE_RECORD_FILES): every file a run leaves
in its dir is one of them, the runtime configs or the stage's own output, and each is checked here
on a real run (os.fsync and os.replace watched), not file by file. Before, only state.json, status.json
and the overrides history were fsynced: after a power loss the new state.json could sit beside the
previous config.yaml, manifest.json or plan.sh."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.run.record_files import RECORD_FILES, STAGE_RECORD_FILES
from launch.run.rundir import RunDir
from tests.support.retool_prepare_only import rec_config_dir

# What a stage's own process writes in its dir (its log, appended; its exit code), not the launcher.
STAGE_OWN = ("log.txt", "exit_code.json")


class Watched:
    """os.fsync and os.replace as this process calls them, in order: ("fsync", path) and
    ("replace", source, target), each path real and absolute."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, ...]] = []
        fsync, replace = os.fsync, os.replace

        def watched_fsync(fd: int) -> None:
            self.events.append(("fsync", os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))))
            fsync(fd)

        def watched_replace(src: Any, dst: Any, **kwargs: Any) -> None:
            paths = [os.path.realpath(os.path.abspath(os.fspath(p))) for p in (src, dst)]
            replace(src, dst, **kwargs)
            self.events.append(("replace", *paths))

        monkeypatch.setattr(os, "fsync", watched_fsync)
        monkeypatch.setattr(os, "replace", watched_replace)

    def not_durable(self, file: Path) -> str | None:
        """Why `file`'s last write was not atomic and durable; None when it was."""
        target = os.path.realpath(file)
        writes = [i for i, e in enumerate(self.events) if e[0] == "replace" and e[2] == target]
        if not writes:
            return "not written by renaming a temporary file over it"
        last = writes[-1]
        source = self.events[last][1]
        if ("fsync", source) not in self.events[:last]:
            return "its temporary file was not fsynced before the rename"
        if ("fsync", os.path.dirname(target)) not in self.events[last + 1 :]:
            return "its directory was not fsynced after the rename"
        return None


@pytest.fixture(scope="module")
def watched_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Watched]]:
    """A real run of the data-preparation experiment `rec`, with this process's fsyncs and renames
    watched."""
    root = tmp_path_factory.mktemp("durable")
    with pytest.MonkeyPatch.context() as patch:
        conf = rec_config_dir(root, patch)
        watched = Watched(patch)
        result = CliRunner().invoke(
            app, ["run", "+experiment=rec", "--config-dir", str(conf)], env={"COLUMNS": "300"}
        )
        assert result.exit_code == 0, result.output
        (run_dir,) = (root / "runs" / "rec").iterdir()
        yield run_dir, watched


def _launcher_files(run_dir: Path) -> list[Path]:
    return sorted(
        p for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock" and p.name not in STAGE_OWN
    )


def test_every_file_of_a_runs_record_is_written_durably(watched_run: tuple[Path, Watched]) -> None:
    run_dir, watched = watched_run
    files = _launcher_files(run_dir)
    assert {p.name for p in files} >= {"config.yaml", "manifest.json", "state.json", "plan.sh", "command.sh"}
    problems = {str(p.relative_to(run_dir)): watched.not_durable(p) for p in files}
    assert not {name: why for name, why in problems.items() if why}, problems


def test_the_record_files_declared_are_every_file_the_launcher_writes(
    watched_run: tuple[Path, Watched],
) -> None:
    """What RECORD_FILES and STAGE_RECORD_FILES declare is what a run leaves (with runtime/): a record
    file written without being declared would be neither cleaned of its temporaries nor hunted."""
    run_dir, _ = watched_run
    for path in _launcher_files(run_dir):
        place = path.relative_to(run_dir).parts
        if len(place) == 1:
            assert place[0] in RECORD_FILES, place
        elif place[0] == "stages":
            assert len(place) == 3 and place[2] in STAGE_RECORD_FILES, place
        else:
            assert place[0] == "runtime" and len(place) == 2, place


def test_configs_kept_under_superseded_are_written_durably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config replaced by another (its copy under superseded/) and a stale stage's runtime config."""
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir()
    run_dir.write_config("a: 1\n", ["a=1"])
    (run_dir.path / "runtime").mkdir()
    runtime = run_dir.path / "runtime" / "train.yaml"
    runtime.write_text("x: 1\n")
    run_dir.stage_dir("train").mkdir(parents=True)
    watched = Watched(monkeypatch)
    run_dir.write_config("a: 2\n", ["a=2"])
    moved = run_dir.supersede("train", [str(runtime)])
    assert moved is not None
    kept = [
        run_dir.path / "superseded" / "config.1.yaml",
        run_dir.path / "superseded" / "overrides.1.yaml",
        run_dir.path / "config.yaml",
        run_dir.path / "overrides.yaml",
        moved / "runtime" / "train.yaml",
    ]
    assert {str(p): watched.not_durable(p) for p in kept} == dict.fromkeys(map(str, kept))


def test_a_sweeps_record_is_written_durably(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from launch.run.sweep import SweepSummary

    summary = SweepSummary(sweep_dir=tmp_path / "sweep", name="s")
    summary.write()  # the first write makes the dir with its record in one rename
    watched = Watched(monkeypatch)
    summary.write()
    records = [summary.sweep_dir / "sweep.json", summary.sweep_dir / "sweep.md"]
    assert {str(p): watched.not_durable(p) for p in records} == dict.fromkeys(map(str, records))
