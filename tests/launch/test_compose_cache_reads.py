"""The composition cache's digest of its inputs (every config file on the search path and the
composition's code) reads a file again only when its status changed or is too recent to trust: each
composition digested ~90 files, read again for every command line a process composes."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.config import compose_cache

_OPENED: list[str] = []
_WATCHING: list[bool] = []


def _audit(event: str, args: tuple) -> None:  # (builtins.open and io.FileIO each raise "open")
    if _WATCHING and event == "open" and isinstance(args[0], str):
        _OPENED.append(args[0])


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """The files opened while the test runs."""
    _OPENED.clear()
    _WATCHING.append(True)
    try:
        yield _OPENED
    finally:
        _WATCHING.clear()


def _config_dir(root: Path, age: float) -> Path:
    """A config dir of two files last changed `age` seconds ago (their change time is now: a file's
    change time cannot be set, so a settled status is taken as settled by moving the clock on)."""
    for name, text in (("model/a.yaml", "model:\n  hf_id: x/a\n"), ("env/b.yaml", "env:\n  name: b\n")):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        then = time.time() - age
        os.utime(root / name, (then, then))
    return root


def _later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    now = time.time_ns()
    monkeypatch.setattr(compose_cache.time, "time_ns", lambda: now + int(seconds * 1e9))


def test_an_unchanged_settled_file_is_not_read_again(
    tmp_path: Path, opened: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(_config_dir(tmp_path, age=60))
    _later(monkeypatch, 10)
    first = compose_cache._inputs_digest([root])
    assert {p for p in opened if p.startswith(root)} == {f"{root}/model/a.yaml", f"{root}/env/b.yaml"}
    opened.clear()
    assert compose_cache._inputs_digest([root]) == first
    assert [p for p in opened if p.startswith(root)] == []
    assert not [p for p in opened if p.endswith(".py")], "the composition's code read again"


def test_a_file_changed_within_the_settling_time_is_read_every_time(
    tmp_path: Path, opened: list[str]
) -> None:
    root = str(_config_dir(tmp_path, age=0))
    compose_cache._inputs_digest([root])
    opened.clear()
    compose_cache._inputs_digest([root])
    assert {p for p in opened if p.startswith(root)} == {f"{root}/model/a.yaml", f"{root}/env/b.yaml"}


@pytest.mark.parametrize("edit", ["bytes", "same size and times", "file added", "file removed", "renamed"])
def test_any_edit_changes_the_digest(tmp_path: Path, edit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _config_dir(tmp_path, age=60)
    _later(monkeypatch, 10)
    before = compose_cache._inputs_digest([str(root)])
    assert compose_cache._inputs_digest([str(root)]) == before
    file = root / "model" / "a.yaml"
    if edit == "bytes":
        file.write_text("model:\n  hf_id: x/a\n  tp: 2\n")
    elif edit == "same size and times":  # the change time still moves
        status = file.stat()
        file.write_text("model:\n  hf_id: x/b\n")
        os.utime(file, ns=(status.st_atime_ns, status.st_mtime_ns))
    elif edit == "file added":
        (root / "model" / "c.yaml").write_text("model: {}\n")
    elif edit == "file removed":
        file.unlink()
    else:
        file.rename(root / "model" / "z.yaml")
    _later(monkeypatch, 20)
    assert compose_cache._inputs_digest([str(root)]) != before
