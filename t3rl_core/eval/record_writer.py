"""Where an eval's trajectory lines are masked, hashed and written: on the event loop, or in a child.

A BFCL record's line costs the event loop ~1 ms: its JSON and token lists (~0.4 ms), the credential
masks of its text (~0.5 ms: `jsonl.line_of`), the line's sha256 and the two writes. The loop serves 32
episodes at once, so every millisecond it spends on a record delays the episodes whose calls end
meanwhile; a thread would not help (the masks hold the GIL). A large eval therefore sends each record's
`jsonl.RecordParts` (text and bytes only, pickled: the masks are a function of text) to a child process
(`python -m t3rl_core.eval.record_writer`), which masks, hashes and appends the lines in the order
sent, with the same functions: the same bytes as written on the loop (tests/eval/test_record_writer.py).
The values this process's Secrets revealed are sent before the first record written after each reveal,
so the child masks every record with the values the loop would have masked it with.

Nothing sent is lost when the eval stops: the child runs in a process group of its own (the terminal's
Ctrl-C and a launcher's SIGTERM go to the eval's group) and writes until the pipe closes; `close()` (the
eval's `finally`) waits for it, before the summary is written. Were the eval's process killed, the child still
writes what the pipe holds and ends at its end. A child that failed makes the next `write` or `close`
raise the OSError of its file (a full disk: the stage's one line names the file) or `RecordWriterError`,
never BrokenPipeError (which the eval reads as its output's reader gone).
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from t3rl_core import outside_json
from t3rl_core.eval import resume as resuming
from t3rl_core.eval.jsonl import line_of, record_bytes, record_parts
from t3rl_core.os_errors import naming
from t3rl_core.secret import SINK_ENV, mask_text, revealed
from t3rl_core.secret import _note_revealed as note_revealed  # the parent's values, as it noted them

if TYPE_CHECKING:
    import asyncio

# A child costs ~0.1 s of CPU to start (its imports) and saves the loop ~0.6 ms a record: evals of
# fewer episodes write on the loop (and tests of small evals start no process).
CHILD_FROM = 128
# The directory holding this t3rl_core: first on the child's path, so that it imports this code whatever
# found it here (PYTHONPATH, or an editable install's import hook, which the child's `-S` leaves out).
_ROOT = str(Path(__file__).resolve().parents[2])
_HEADER = struct.Struct("<Q")
_SECRETS, _RECORD = 0, 1
# How the child tells an OSError of its files (errno and file, as JSON after it) from any other failure.
_OS_ERROR = "t3rl-record-writer-os-error "
# A pipe as large as Linux lets a process make it: ~11 BFCL lines in flight before its buffer holds more.
_PIPE_BYTES = 1 << 20
# The eval's buffer of what the pipe has not taken (~400 BFCL records; memory only as far as it is used):
# a record is copied into it whole, and `write` waits for the child only once it is this far behind.
_BUFFER_BYTES = 32 << 20


class RecordWriterError(RuntimeError):
    """The child writing the records failed: records sent since may be missing (--resume plays them)."""


class LoopWriter:
    """Each record's line made and written on the calling thread, before `write` returns."""

    def __init__(self, trajectories: Path, index: Path) -> None:
        # Binary: each line is written as the bytes its digest is of (record_bytes).
        self._sink = trajectories.open("ab")
        self._index = index.open("a")

    def write(self, key: resuming.Key, record: dict[str, Any], job: str, attempt: int) -> None:
        # record_bytes: never lose an episode to a type
        self.write_line(key, record_bytes(record), job, attempt)

    def write_line(self, key: resuming.Key, line: bytes, job: str, attempt: int) -> None:
        resuming.write(self._sink, self._index, key, line, job, attempt)

    def close(self) -> None:
        # A failed flush leaves its bytes buffered: closing flushes them again, and fails again.
        try:
            with naming(self._index):
                self._index.close()
        finally:
            with naming(self._sink):
                self._sink.close()


class ChildWriter:
    """Each record's parts sent to a child that writes its line (the module's docstring). The child
    starts with the first record (its imports overlap no eval's start; started by a thread when an
    event loop runs, whose `Popen` would wait for the child's exec).

    The event loop writes the pipe itself, never waiting: what a full pipe does not take stays in the
    pipe's buffer and is written when the loop sees the pipe writable (`add_writer`); outside a loop,
    and once the child is `_BUFFER_BYTES` behind, `write` waits for it. (A thread wrote the pipe: woken
    for every record, it took the GIL from the loop, ~2-3x the loop thread's voluntary context
    switches of an eval of 300 BFCL records with one core kept busy; and it wrote each record with one
    write(2), whose bytes not taken were lost: a write cut short by a signal, or by the eval stopped
    and continued while the pipe was full, left the child reading the next record as this one's rest.)
    A record is copied into the buffer whole or not at all (a Ctrl-C or SIGTERM raised on the loop
    cuts no record in two), and the buffer's C code counts the bytes each write(2) took."""

    def __init__(self, trajectories: Path, index: Path) -> None:
        self._paths = (trajectories, index)
        for path in self._paths:  # there, as the loop's writer leaves them, whatever is written
            path.open("ab").close()
        self._child: subprocess.Popen[bytes] | None = None
        self._starting: threading.Thread | None = None
        self._pipe: io.BufferedWriter | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop writing the rest of a full pipe
        self._capacity = _BUFFER_BYTES  # the buffer's size
        self._held = 0  # at least the bytes `_pipe` holds (0 once it is seen empty)
        self._sent_secrets: frozenset[str] = frozenset()
        self._failure: BaseException | None = None

    def write(self, key: resuming.Key, record: dict[str, Any], job: str, attempt: int) -> None:
        if self._pipe is None:
            self._start()
        if self._failure is not None or (self._child is not None and self._child.poll() is not None):
            raise self._error()  # it ends only when closed
        secrets = revealed()
        if len(secrets) != len(self._sent_secrets):  # a Secret revealed since: the child masks it too
            self._send((_SECRETS, sorted(secrets - self._sent_secrets)))
            self._sent_secrets = secrets
        self._send((_RECORD, (key, job, attempt, record_parts(record))))

    def close(self) -> None:
        """Waits until the child has written every record sent and ended (Ctrl-C cannot cut it short:
        the records must be on disk before the summary)."""
        if self._pipe is None:
            return
        self._stop_pushing()
        if self._starting is not None:
            _join(self._starting)
        if self._failure is None:
            try:
                _flush_all(self._pipe)
            except OSError as error:  # the child ended: nothing more can be written
                self._failure = error
        with contextlib.suppress(OSError):  # the child's end of the pipe sees its end
            self._pipe.close()
        if self._child is None:  # it did not start
            raise self._error()
        code = _wait(self._child)
        if code != 0 or self._failure is not None:
            self._failure = self._failure or RecordWriterError(f"exit status {code}")
            raise self._error()
        if self._child.stderr is not None:
            self._child.stderr.close()

    def _start(self) -> None:
        read, write = os.pipe()
        with contextlib.suppress(OSError, AttributeError):  # not Linux, or a lower limit: 64 KiB then
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        os.set_blocking(write, False)
        self._pipe = io.BufferedWriter(os.fdopen(write, "wb", buffering=0), buffer_size=_BUFFER_BYTES)
        # The values to mask come through the pipe; it announces none to a launcher (this process did).
        env = {key: value for key, value in os.environ.items() if key != SINK_ENV}
        env["PYTHONPATH"] = os.pathsep.join([_ROOT, *(p for p in sys.path if p)])
        if _running_loop() is None:
            self._spawn(read, env)
        else:  # the loop goes on while the child starts; the pipe and its buffer hold the first records
            self._starting = threading.Thread(target=self._spawn, args=(read, env), daemon=True)
            self._starting.start()

    def _spawn(self, read: int, env: dict[str, str]) -> None:
        try:
            with os.fdopen(read, "rb") as stdin:
                # `-S`: no `site` (its .pth files, an editable install's import hook: ~50 ms of the
                # child's ~0.15 s of start-up CPU, which shares the loop's core when one is kept busy);
                # the path it would make is this process's, handed over whole in PYTHONPATH.
                self._child = subprocess.Popen(
                    [sys.executable, "-S", "-m", "t3rl_core.eval.record_writer", *map(str, self._paths)],
                    stdin=stdin,
                    stderr=subprocess.PIPE,
                    env=env,
                    # Its own process group: the terminal's Ctrl-C and a launcher's signal to the eval's
                    # group stop the eval, which then closes the pipe; the child, even while it imports,
                    # is not stopped with it (it ignores both signals once it runs, in case one is sent).
                    start_new_session=True,
                )
        except OSError as error:
            self._failure = error
            return
        _second_to_the_loop(self._child.pid)

    def _send(self, message: tuple[int, Any]) -> None:
        assert self._pipe is not None
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        data = _HEADER.pack(len(payload)) + payload
        if self._held + len(data) > self._capacity:  # it would not be copied whole: wait for the child
            self._stop_pushing()
            self._wait_until_written()
            if len(data) > self._capacity:  # larger than the buffer: a buffer of its size from now on
                larger = io.BufferedWriter(
                    os.fdopen(os.dup(self._pipe.raw.fileno()), "wb", buffering=0), len(data)
                )
                smaller, self._pipe, self._capacity = self._pipe, larger, len(data)
                smaller.close()  # empty; the pipe stays open through `larger`
        self._held += len(data)  # before the copy: an interrupt between them leaves it counted
        self._pipe.write(data)
        self._push()
        if self._failure is not None:
            raise self._error()

    def _push(self) -> None:
        """Writes what the pipe takes now; the rest once the loop sees it writable (outside a loop, waits)."""
        assert self._pipe is not None
        try:
            self._pipe.flush()
        except BlockingIOError:
            loop = self._loop or _running_loop()
            if loop is None:
                self._wait_until_written()
            elif self._loop is None:
                self._loop = loop
                loop.add_writer(self._pipe.raw.fileno(), self._push)
            return
        except OSError as error:  # the child ended: nothing more can be written
            self._failure = error
            self._stop_pushing()
            return
        self._held = 0
        self._stop_pushing()

    def _stop_pushing(self) -> None:
        if self._loop is not None and self._pipe is not None:
            self._loop.remove_writer(self._pipe.raw.fileno())
        self._loop = None

    def _wait_until_written(self) -> None:
        assert self._pipe is not None
        try:
            _flush_all(self._pipe)
        except OSError as error:
            self._failure = error
            raise self._error() from None
        self._held = 0

    def _error(self) -> Exception:
        """What the child's failure is to the eval: the OSError of one of its files (a full disk, a
        quota: the stage's one line names the file and the fix, as for a record the loop writes), or
        RecordWriterError with what the child said."""
        why = self._why()
        for line in why.splitlines():
            _, said, error = line.partition(_OS_ERROR)
            with contextlib.suppress(ValueError, TypeError):  # cut short: the child's words, as they are
                code, name = outside_json.loads(error, "the record writer's error") if said else (None, None)
                if isinstance(code, int) and isinstance(name, str | None):
                    return OSError(code, os.strerror(code), name)
        return RecordWriterError(why)

    def _why(self) -> str:
        if self._child is None:
            return f"the child writing the eval's records did not start: {self._failure}"
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._child.wait(timeout=5.0)
        if self._child.poll() is None:  # alive with its pipe broken: it can write nothing more
            self._child.kill()
            self._child.wait()
        said = ""
        if self._child.stderr is not None and not self._child.stderr.closed:
            with self._child.stderr:
                said = self._child.stderr.read().decode(errors="replace")
        return "the child writing the eval's records failed: " + (said.strip() or str(self._failure))


def _second_to_the_loop(pid: int) -> None:
    """The child under SCHED_BATCH (Linux; its fair share of the CPU as before): woken by a record, it
    no longer takes the CPU from the event loop at once, but once the loop waits (or at the next tick).
    With one core kept busy the loop and the child share the other, and each record's wake-up preempted
    the loop for the child's ~0.7 ms of masks while the episodes' calls came due."""
    with contextlib.suppress(AttributeError, OSError):  # not Linux, or the child has already ended
        os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    # An eval, which calls this, has asyncio imported already.
    import asyncio  # lazy: ~60 ms of the record-writing child's start-up, which never needs it

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _flush_all(pipe: io.BufferedWriter) -> None:
    """Everything `pipe` holds written, waiting for the child (a Ctrl-C meanwhile does not stop it:
    the buffer keeps its count of what each write took, so the flush goes on where it was)."""
    fd = pipe.raw.fileno()
    os.set_blocking(fd, True)
    try:
        while True:
            with contextlib.suppress(KeyboardInterrupt):
                pipe.flush()
                return
    finally:
        os.set_blocking(fd, False)


def writer(trajectories: Path, index: Path, episodes: int) -> LoopWriter | ChildWriter:
    """The writer of an eval of `episodes` episodes still to play."""
    return ChildWriter(trajectories, index) if episodes >= CHILD_FROM else LoopWriter(trajectories, index)


def _join(thread: threading.Thread) -> None:
    while thread.is_alive():  # a KeyboardInterrupt here must not leave the records unsent
        with contextlib.suppress(KeyboardInterrupt):
            thread.join()


def _wait(child: subprocess.Popen[bytes]) -> int:
    while True:
        with contextlib.suppress(KeyboardInterrupt):
            return child.wait()


def _messages(stream: BinaryIO) -> Any:
    while header := stream.read(_HEADER.size):
        if len(header) < _HEADER.size:
            raise EOFError("a record's header cut short")
        (size,) = _HEADER.unpack(header)
        payload = stream.read(size)
        if len(payload) < size:
            raise EOFError("a record cut short")
        yield pickle.loads(payload)


def main(trajectories: str, index: str) -> None:
    """The child: writes each record sent on stdin until it closes."""
    # The terminal's Ctrl-C and a launcher's SIGTERM reach the whole group: the eval stops, and this
    # writes what it was sent until the pipe closes.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        lines = LoopWriter(Path(trajectories), Path(index))
        with contextlib.closing(lines):
            for kind, body in _messages(sys.stdin.buffer):
                if kind == _SECRETS:
                    for value in body:
                        note_revealed(value)
                    continue
                key, job, attempt, parts = body
                lines.write_line(key, line_of(parts), job, attempt)
    except OSError as error:  # one of its files: said so that the eval raises it as that file's error
        name = error.filename if isinstance(error.filename, str) else None
        sys.stderr.write(_OS_ERROR + json.dumps([error.errno, name and mask_text(name)]) + "\n")
        sys.exit(1)
    except Exception as error:  # said to the eval, masked: a message may quote what it was writing
        sys.stderr.write(mask_text(f"{type(error).__name__}: {error}") + "\n")
        sys.exit(1)


if __name__ == "__main__":
    main(*sys.argv[1:3])
