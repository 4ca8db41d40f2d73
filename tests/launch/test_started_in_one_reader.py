"""The directory a run was started in is read from its manifest by one function
(launch.run.rundir.started_in): a resume moved there (launch.run.single.in_recorded_working_dir) and
every listing's check of a sweep point's stale stages composed there (launch.run.point_stale), each reading
`working_dir` in its own way; a record whose dir is gone, empty, or not a path must send both to the same
place."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from launch.output.plain import PlainConsole
from launch.run import point_stale
from launch.run.rundir import RunDir, RunDirError
from launch.run.single import in_recorded_working_dir

ROOT = Path(__file__).resolve().parents[2]

# What a manifest may record, as (name, value given the case's started and here dirs).
RECORDED: dict[str, Callable[[Path, Path], object]] = {
    "the dir it was started in": lambda started, here: str(started),
    "a dir gone since": lambda started, here: str(started / "gone"),
    "the dir the command is typed in": lambda started, here: str(here),
    "none (a record from before)": lambda started, here: None,
    "an empty string": lambda started, here: "",
    "not a string": lambda started, here: 7,
    "a relative path": lambda started, here: os.path.relpath(started, here),
}


def _manifest(run: Path, value: object) -> dict[str, object]:
    manifest = {"config_dirs": []} | ({} if value is None else {"working_dir": value})
    (run / "manifest.json").write_text(json.dumps(manifest))
    return manifest


@pytest.mark.parametrize("case", RECORDED)
def test_a_resume_and_the_stale_check_resolve_in_the_same_dir(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, here, run = tmp_path / "started", tmp_path / "here", tmp_path / "run"
    for d in (started, here, run):
        d.mkdir()
    manifest = _manifest(run, RECORDED[case](started, here))

    composed_in: list[str] = []

    def composed_point(*_: object) -> None:
        composed_in.append(os.getcwd())
        raise RunDirError("stood in")

    monkeypatch.setattr(point_stale, "composed_point", composed_point)
    monkeypatch.chdir(here)
    assert point_stale.staleness(run) == point_stale.Stale("not checked for stale stages: stood in", False)
    in_recorded_working_dir(RunDir(run), manifest, PlainConsole())
    assert composed_in == [os.getcwd()]


def test_only_rundir_reads_the_recorded_working_dir() -> None:
    """A manifest's `working_dir` is read through `started_in`, not by a module's own `.get`."""
    reading = re.compile(r"""(\.get\(|\[)\s*["']working_dir["']""")
    readers = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "launch").rglob("*.py")
        if "working_dir" in (text := p.read_text()) and reading.search(text)
    )
    assert readers == [], f"read it with launch.run.rundir.started_in: {readers}"
