"""Atomic file writes (`atomic_write_text` lives in t3rl_core, which the runtime shares), exclusive
locks and where t3rl keeps its caches, shared by every step of the flow (composition cache, run
directory, executors, sweeps, `t3rl runs`)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from t3rl_core.atomic_files import atomic_write_text

__all__ = [
    "LockHeld",
    "atomic_write_json",
    "atomic_write_text",
    "cache_dir",
    "caches_on",
    "exclusive_lock",
    "is_locked",
    "waiting_lock",
    "write_record",
    "write_record_json",
]


def cache_dir() -> Path:
    """Where t3rl keeps caches (the composition cache, `t3rl runs`' parsed configs, the secret
    fingerprints' key): $T3RL_CACHE_DIR, else $XDG_CACHE_HOME/t3rl, else ~/.cache/t3rl."""
    explicit = os.environ.get("T3RL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "t3rl"


def caches_on() -> bool:
    """False under T3RL_NO_CACHE=1 (any value but 0): every cache off."""
    return os.environ.get("T3RL_NO_CACHE", "") in ("", "0")


def atomic_write_json(path: Path, data: Any, *, durable: bool = False) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=False) + "\n", durable=durable)


def write_record(path: Path, text: str) -> None:
    """Write a file of a run's record: the files `launch.run.record_files` declares (RECORD_FILES, a
    stage's STAGE_RECORD_FILES), the runtime configs the stages read, the configs kept under
    superseded/ and an executor's job record. Every one goes through here: atomic (the old content or
    the new), and durable (the file and its directory fsynced), so after a power loss a record is
    never older than the state.json that was written after it (config.yaml and manifest.json were not
    fsynced while state.json was: a resume could find the new state beside the old config)."""
    atomic_write_text(path, text, durable=True)


def write_record_json(path: Path, data: Any) -> None:
    """`write_record` of `data` as JSON (indented, keys in their order)."""
    write_record(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


class LockHeld(Exception):
    """Another process holds the lock; `holder` is its pid when this host's kernel shows it."""

    def __init__(self, path: str, holder: int | None = None) -> None:
        super().__init__(path)
        self.holder = holder

    def who(self) -> str:
        """The holder for a message, " (pid N)"; "" when it is not known here (another host's, say). A
        holder suspended (Ctrl-Z pressed for Ctrl-C) is said so, with what lets it go on: it holds the
        lock and does nothing until then, and "wait for it to finish" would wait forever."""
        if not self.holder:
            return ""
        if _process_state(self.holder) not in ("T", "t"):
            return f" (pid {self.holder})"
        return (
            f" (pid {self.holder}, suspended: Ctrl-Z stopped it; `fg` in its terminal, or `kill -CONT "
            f"{self.holder}`, lets it go on)"
        )


def _process_state(pid: int) -> str | None:
    """The kernel's one-letter state of `pid` (T: stopped by a signal), None when it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding an exclusive flock on `path`, from /proc/locks (read-only: the
    lock file is not written to name its holder); None when the kernel shows none (a holder on another
    host of a shared file system, a pid outside this PID namespace, no /proc)."""
    try:
        st = os.stat(path)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; a waiter's line has "->" after the number.
        fields = line.split()
        if len(fields) < 6 or fields[1:4] != ["FLOCK", "ADVISORY", "WRITE"]:
            continue
        try:
            major, minor, inode = fields[5].split(":")
            matches = (int(major, 16), int(minor, 16), int(inode)) == (
                os.major(st.st_dev),
                os.minor(st.st_dev),
                st.st_ino,
            )
            pid = int(fields[4])
        except ValueError:
            continue
        if matches and pid > 0:
            return pid
    return None


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold `path` as an exclusive lock for the block, or raise LockHeld at once (no waiting).

    An advisory `flock` on the file: the OS releases it if this process dies, so a killed launcher
    never leaves a stale lock. Each call opens its own descriptor, so a second holder in the same
    process is refused too, as it would be in another process. (flock directly, not the filelock
    package: importing that pulls in asyncio, a cost on every `t3rl plan` and `run`; and it opens
    with O_TRUNC, which rewrites the file's mtime on every try.) The file is created if missing and
    otherwise left as it is: a refused try changes nothing in the run dir. A directory is locked itself
    (nothing is created in it).
    """
    fd = os.open(path, os.O_RDONLY if path.is_dir() else os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, path)
    except BlockingIOError:
        os.close(fd)
        raise LockHeld(str(path), lock_holder(path)) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        yield
    finally:
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
            _flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, path)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            _flock(fd, fcntl.LOCK_EX, path)
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
        _flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, path)
    except BlockingIOError:
        return True
    except OSError as err:
        if err.errno != errno.ENOLCK:
            raise
        return False  # no file system lock here: no launcher can hold one either
    finally:
        os.close(fd)
    return False


# Options of an NFS mount under which flock locks are this host's alone (`nolock` sets local_lock=all).
_HOST_LOCAL_LOCKS = frozenset({"local_lock=flock", "local_lock=all", "nolock"})


def host_local_locks(path: Path, mountinfo: str | None = None) -> str | None:
    """The mount point of `path` when its file system keeps flock locks on this host alone (NFS mounted
    `nolock` or `local_lock=flock|all`): a lock taken there excludes no process of another host, so a
    run dir's lock does not keep a launcher of another host out. None elsewhere (or when unknown).
    `mountinfo`: /proc/self/mountinfo's text (read when None)."""
    try:
        text = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    except OSError:
        return None
    target = os.path.realpath(path)
    best: tuple[str, str, str] | None = None
    for line in text.splitlines():
        # "36 35 98:0 /root /mount/point rw,noatime shared:1 - nfs4 server:/export rw,vers=4.2,…"
        head, dash, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not dash or len(fields) < 5 or len(rest) < 3:
            continue
        point = fields[4].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best[0])):
            best = (point, rest[0], rest[2])
    if best is None or not best[1].startswith("nfs"):
        return None
    return best[0] if _HOST_LOCAL_LOCKS & set(best[2].split(",")) else None


def _flock(fd: int, operation: int, path: Path) -> None:
    """`fcntl.flock`, its refusal naming the lock file: a file system that keeps no locks (an NFS mount
    without its lock service: ENOLCK) raised an OSError naming no file, which reached the user as a
    traceback instead of one line naming the run dir's lock and where to put the run instead."""
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        raise
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(path)) from None
