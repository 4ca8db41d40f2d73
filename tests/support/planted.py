"""Planted secrets: run t3rl's CLI in-process and find a planted value in its output or in any file it
wrote (run dirs, plan dirs, the composition cache)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ: Mapping[str, str]) -> Path:
    """`tmp_path` as the working directory, with a composition cache of its own, the default run and
    plan dirs (under it) and the variables of `environ` set (a test's planted values)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_PLANS_DIR", "T3RL_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    """Exit code and everything the command printed (stdout and stderr)."""
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"}, catch_exceptions=False)
    return result.exit_code, result.output + (result.stderr if result.stderr_bytes else "")


def leaks(planted: Mapping[str, str], *roots: Path) -> list[str]:
    """`path: name` for every file under `roots` that holds a planted value."""
    return [
        f"{path}: {name}"
        for root in roots
        if root.exists()
        for path in root.rglob("*")
        if path.is_file()
        for name, value in planted.items()
        if value.encode() in path.read_bytes()
    ]


def shown(planted: Mapping[str, str], output: str) -> list[str]:
    """The names of the planted values `output` holds."""
    return [name for name, value in planted.items() if value in output]
