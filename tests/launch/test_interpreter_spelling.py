"""A run `t3rl run` started (its script runs `<venv>/bin/python3`) resumed with `python -m launch run
--run-dir …` (`<venv>/bin/python`, the same file) planned every stage's command with the other spelling:
every stage ran again as "its command, env or config changed"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from launch.plan.context import this_interpreter
from launch.run.rundir import RunDir
from launch.run.steps import plan_context


@pytest.fixture
def venv_bin(tmp_path: Path) -> Path:
    """A venv's bin: python3 the interpreter, python and python3.11 links to it."""
    (tmp_path / "python3").symlink_to(sys.executable)
    (tmp_path / "python").symlink_to("python3")
    (tmp_path / "python3.11").symlink_to("python3")
    return tmp_path


@pytest.mark.parametrize("started_as", ["python", "python3", "python3.11"])
def test_every_name_of_one_interpreter_plans_one_command(
    venv_bin: Path, started_as: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "executable", str(venv_bin / started_as))
    assert this_interpreter() == str(venv_bin / "python3")
    run_dir = RunDir.new(tmp_path / "runs", "r")
    assert plan_context(run_dir).python == str(venv_bin / "python3")


def test_another_interpreter_keeps_its_own_name(venv_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """python3 beside it is another file (a venv of another Python), or there is none: its own path, kept
    in its directory (a venv's interpreter is the venv only when started from there)."""
    other = venv_bin / "other"
    other.mkdir()
    (other / "python").symlink_to(sys.executable)
    (other / "python3").write_text("")
    monkeypatch.setattr(sys, "executable", str(other / "python"))
    assert this_interpreter() == str(other / "python")
    (other / "python3").unlink()
    assert this_interpreter() == str(other / "python")
