"""A launcher killed outright leaves its secret sink's directory behind; the next sink removes the
directories whose socket nobody holds, and nothing else (a live sink, one still opening, other names)."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from launch.run.secret_sink import SecretSink

KILLED = (
    "from launch.run.secret_sink import SecretSink\n"
    "import sys, time\n"
    "sink = SecretSink()\n"
    "print(sink.path, flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def base(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # A short folder of its own: a sink in a temporary folder too long for a socket's path uses /tmp.
    short = Path(tempfile.mkdtemp(prefix="t3rl-sink-test-", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(short))
    yield short
    shutil.rmtree(short, ignore_errors=True)


def _killed_launchers_sink(base: Path) -> Path:
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(base)},
    )
    assert child.stdout is not None
    path = Path(child.stdout.readline().strip())
    child.send_signal(signal.SIGKILL)
    child.wait()
    child.stdout.close()
    return path.parent


def test_a_killed_launchers_sink_is_removed_and_live_ones_are_kept(base: Path) -> None:
    live = SecretSink()
    opening = base / "t3rl-secrets-opening"
    opening.mkdir()
    other = base / "t3rl-something-else"
    other.mkdir()
    orphan = _killed_launchers_sink(base)
    assert orphan.is_dir() and Path(live.path).exists() and opening.is_dir()
    newest = SecretSink()
    try:
        assert not orphan.exists()
        assert Path(live.path).exists() and Path(newest.path).exists()
        assert opening.is_dir() and other.is_dir()
    finally:
        live.close()
        newest.close()


def test_a_directory_that_never_got_its_socket_is_removed_once_old(base: Path) -> None:
    stale = base / "t3rl-secrets-stale"
    stale.mkdir()
    old = time.time() - 3600
    os.utime(stale, (old, old))
    SecretSink().close()
    assert not stale.exists()
