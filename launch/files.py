"""Atomic file writes (`atomic_write_text` lives in t3rl_core, which the runtime shares) and exclusive
locks, shared by every step of the flow (composition cache, run directory, executors, sweeps)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from t3rl_core.atomic_files import atomic_write_text

__all__ = [
    "LockHeld",
    "atomic_write_json",
    "atomic_write_text",
    "exclusive_lock",
    "is_locked",
    "waiting_lock",
]


def atomic_write_json(path: Path, data: Any, *, durable: bool = False) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", durable=durable)


class LockHeld(Exception):
    """Another process holds the lock; `holder` says which, as it recorded itself in the lock file."""

    def __init__(self, path: str, holder: str = "") -> None:
        super().__init__(path)
        self.holder = holder

    def who(self) -> str:
        """The holder for a message, as " (pid N, since T)", or "" when it recorded nothing (yet)."""
        return f" ({self.holder})" if self.holder else ""


def _record_holder(fd: int) -> None:
    """Write this process into the lock file it holds (in place: a new file would not be the one locked),
    so a process refused the lock can name it."""
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    record = {"pid": os.getpid(), "host": socket.gethostname(), "since": since}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)


def _read_holder(fd: int) -> str:
    """The holder a lock file names, as "pid N on HOST since T"; "" when it names none."""
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"null")
        pid, host, since = record["pid"], record["host"], record["since"]
    except (OSError, ValueError, TypeError, KeyError):
        return ""
    where = "" if host == socket.gethostname() else f" on {host}"
    return f"pid {pid}{where}, since {since}"


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold `path` as an exclusive lock for the block, or raise LockHeld at once (no waiting).

    An advisory `flock` on the file: the OS releases it if this process dies, so a killed launcher
    never leaves a stale lock. Each call opens its own descriptor, so a second holder in the same
    process is refused too, as it would be in another process. (flock directly, not the filelock
    package: importing that pulls in asyncio, a cost on every `t3rl plan` and `run`; and it opens
    with O_TRUNC, which rewrites the file's mtime on every try.) The file is created if missing; a
    refused try changes nothing in it. The holder writes its pid, host and start into the file while it
    holds it (emptied again on release), which `LockHeld.who()` reads back for the refused one's
    message. A directory is locked itself (nothing is created or written in it; its holder is unnamed).
    """
    is_file = not path.is_dir()
    fd = os.open(path, os.O_RDWR | os.O_CREAT if is_file else os.O_RDONLY, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(fd) if is_file else ""
        os.close(fd)
        raise LockHeld(str(path), holder) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        if is_file:
            with contextlib.suppress(OSError):
                _record_holder(fd)
        yield
    finally:
        if is_file:
            with contextlib.suppress(OSError):  # a full disk or a read-only dir: the lock is what counts
                os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def waiting_lock(path: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold `path` as an exclusive lock for the block, waiting for another holder to let go first
    (`on_wait` is called once when it must wait). Same flock as `exclusive_lock`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def is_locked(path: Path) -> bool:
    """True while some process holds the lock at `path` (see `exclusive_lock`); neither creates nor
    modifies the file (`t3rl runs` and sweeps probe run dirs that a launcher may be using).

    The probe asks for a shared lock, which only an exclusive holder refuses: two probes at once do
    not take each other for a holder. Closing the descriptor drops the probe's lock.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
