"""A directory t3rl made a directory in is not probed again in the same process while nothing that
decides it changed (launch.checks.rules.local_dirs._MADE_IN); a change of its modes, its owner or a
new directory in its place is probed anew, and a refusal is never kept."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from launch.checks.rules import local_dirs
from launch.checks.rules.local_dirs import unwritable


@pytest.fixture
def probes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    real = tempfile.mkdtemp

    def counted(*args: object, **kwargs: object) -> str:
        made.append(str(kwargs.get("dir")))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local_dirs.tempfile, "mkdtemp", counted)
    return made


def test_a_directory_made_in_once_is_not_probed_again(tmp_path: Path, probes: list[str]) -> None:
    assert unwritable(tmp_path / "runs") is None
    assert unwritable(tmp_path / "plans") is None  # the same ancestor, in another check
    assert probes == [str(tmp_path)]


def test_its_modes_or_a_new_directory_in_its_place_are_probed_anew(tmp_path: Path, probes: list[str]) -> None:
    where = tmp_path / "out"
    where.mkdir()
    assert unwritable(where / "runs") is None
    where.chmod(0o700)
    assert unwritable(where / "runs") is None
    where.rmdir()
    (tmp_path / "elsewhere").mkdir()
    where.mkdir(mode=0o755)  # another directory at the path (its inode may be the old one's)
    where.chmod(0o750)
    assert unwritable(where / "runs") is None
    assert probes == [str(where)] * 3


def test_a_refusal_is_probed_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def refused(*args: object, **kwargs: object) -> str:
        calls.append(str(kwargs.get("dir")))
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(local_dirs.tempfile, "mkdtemp", refused)
    for _ in range(2):
        why = unwritable(tmp_path / "runs")
        assert why is not None and "Read-only file system" in why
    assert calls == [str(tmp_path)] * 2
    monkeypatch.undo()
    assert unwritable(tmp_path / "runs") is None  # writable again: found by a probe, not a memory
    assert os.listdir(tmp_path) == []  # the probe's directory removed
