"""A demanding user's command lines (helper-24's red-team, docs/reference/cli-behaviour.md): a reader that
goes away, an interrupted write, bad inputs of every kind. Each test failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.no_slime import cli_workdir


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_workdir(tmp_path / "work", monkeypatch)


def _t3rl_into_closed_pipe(here: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    """`t3rl ARGV | head -0`, deterministically: the reader is gone before the first write."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-c", "from launch.cli import main; main()", *argv],
            cwd=here,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "+experiment=quickstart"],
        ["--help"],
        ["runs", "--help"],
        ["ls"],
        ["runs"],
        ["show", "+experiment=quickstart"],
    ],
    ids=["plain-plan", "help", "subcommand-help", "ls", "runs", "show"],
)
def test_a_reader_that_went_away_ends_quietly_with_141(here: Path, argv: list[str]) -> None:
    """`t3rl plan … | head -1` ended with 1 (rich's and Click's way), like a failure: now 141 (128 +
    SIGPIPE, what `seq 99 | head -1` ends with under pipefail) and nothing on stderr."""
    done = _t3rl_into_closed_pipe(here, *argv)
    assert (done.returncode, done.stderr.decode()) == (141, "")
