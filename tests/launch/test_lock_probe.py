"""Asking whether a run dir's lock is held leaves the lock file as it was, and still sees a holder.

`t3rl runs` and the sweep launcher probe every run dir's `.lock`; a probe that rewrote it would change
the run dir's files (and their mtimes) on every listing.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launch.files import LockHeld, exclusive_lock, is_locked

OLD = 1_000_000_000 * 10**9  # 2001: any write by a probe would move the mtime to now


def lock_file(tmp_path: Path, content: bytes = b"") -> Path:
    path = tmp_path / ".lock"
    path.write_bytes(content)
    os.utime(path, ns=(OLD, OLD))
    return path


def fingerprint(path: Path) -> tuple[bytes, int, int, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode


@pytest.mark.parametrize("content", [b"", b"written by an older t3rl\n"], ids=["empty", "with content"])
def test_a_probe_of_a_free_lock_changes_nothing_in_the_file(tmp_path: Path, content: bytes) -> None:
    path = lock_file(tmp_path, content)
    before, dir_before = fingerprint(path), tmp_path.stat().st_mtime_ns
    assert is_locked(path) is False
    assert fingerprint(path) == before
    assert path.stat().st_mtime_ns == OLD
    assert tmp_path.stat().st_mtime_ns == dir_before


def test_a_refused_exclusive_lock_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = lock_file(tmp_path, b"x")
    with exclusive_lock(path):
        before = fingerprint(path)
        assert is_locked(path) is True
        with pytest.raises(LockHeld), exclusive_lock(path):
            pass
        assert fingerprint(path) == before
    assert path.stat().st_mtime_ns == OLD


def test_a_missing_lock_is_free_and_is_not_created(tmp_path: Path) -> None:
    assert is_locked(tmp_path / ".lock") is False
    assert not (tmp_path / ".lock").exists()


HOLDER = """
import sys, time
from pathlib import Path
from launch.files import exclusive_lock
with exclusive_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_lock_held_by_another_process_is_seen_until_it_exits(tmp_path: Path) -> None:
    path = lock_file(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        before = fingerprint(path)
        assert is_locked(path) is True
        assert is_locked(path) is True  # a probe does not release or steal it
        assert fingerprint(path) == before
    finally:
        holder.communicate("\n", timeout=30)
    assert holder.returncode == 0
    assert is_locked(path) is False


def test_a_probe_does_not_take_a_concurrent_probe_for_a_holder(tmp_path: Path) -> None:
    path = lock_file(tmp_path)
    # Another process in the middle of its own probe holds a shared lock for an instant.
    with path.open("rb") as other:
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        assert is_locked(path) is False
