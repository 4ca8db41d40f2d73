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
import json
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, BinaryIO

from t3rl_core import outside_json
from t3rl_core.eval import resume as resuming
from t3rl_core.eval.jsonl import line_of, record_bytes, record_parts
from t3rl_core.os_errors import naming
from t3rl_core.secret import SINK_ENV, mask_text, revealed
from t3rl_core.secret import _note_revealed as note_revealed  # the parent's values, as it noted them

# A child costs ~0.1 s of CPU to start (its imports) and saves the loop ~0.6 ms a record: evals of
# fewer episodes write on the loop (and tests of small evals start no process).
CHILD_FROM = 128
_HEADER = struct.Struct("<Q")
_SECRETS, _RECORD = 0, 1
# How the child tells an OSError of its files (errno and file, as JSON after it) from any other failure.
_OS_ERROR = "t3rl-record-writer-os-error "
# A pipe as large as Linux lets a process make it: ~11 BFCL lines in flight before a send waits.
_PIPE_BYTES = 1 << 20


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
    starts with the first record (its imports overlap no eval's start); a thread of this process
    writes to the pipe (the write waits while the pipe is full; it releases the GIL)."""

    def __init__(self, trajectories: Path, index: Path) -> None:
        self._paths = (trajectories, index)
        for path in self._paths:  # there, as the loop's writer leaves them, whatever is written
            path.open("ab").close()
        self._child: subprocess.Popen[bytes] | None = None
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._sender: threading.Thread | None = None
        self._sent_secrets: frozenset[str] = frozenset()
        self._failure: BaseException | None = None

    def write(self, key: resuming.Key, record: dict[str, Any], job: str, attempt: int) -> None:
        if self._child is None:
            self._start()
        if self._failure is not None or self._child.poll() is not None:  # it ends only when closed
            raise self._error()
        secrets = revealed()
        if len(secrets) != len(self._sent_secrets):  # a Secret revealed since: the child masks it too
            self._send((_SECRETS, sorted(secrets - self._sent_secrets)))
            self._sent_secrets = secrets
        self._send((_RECORD, (key, job, attempt, record_parts(record))))

    def close(self) -> None:
        """Waits until the child has written every record sent and ended (Ctrl-C cannot cut it short:
        the records must be on disk before the summary)."""
        if self._child is None:
            return
        assert self._sender is not None
        self._queue.put(None)
        _join(self._sender)
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
        # The values to mask come through the pipe; it announces none to a launcher (this process did).
        env = {key: value for key, value in os.environ.items() if key != SINK_ENV}
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        with os.fdopen(read, "rb") as stdin:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "t3rl_core.eval.record_writer", *map(str, self._paths)],
                stdin=stdin,
                stderr=subprocess.PIPE,
                env=env,
                # Its own process group: the terminal's Ctrl-C and a launcher's signal to the eval's group
                # stop the eval, which then closes the pipe; the child, even while it imports, is not
                # stopped with it (it ignores both signals once it runs, in case one is sent to it).
                start_new_session=True,
            )
        self._sender = threading.Thread(
            target=self._send_all, args=(os.fdopen(write, "wb", buffering=0),), daemon=True
        )
        self._sender.start()

    def _send(self, message: tuple[int, Any]) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self._queue.put(_HEADER.pack(len(payload)) + payload)

    def _send_all(self, pipe: IO[bytes]) -> None:
        with pipe:
            while (data := self._queue.get()) is not None:
                try:
                    pipe.write(data)  # an unbuffered file writes it all, over several writes if need be
                except OSError as error:  # the child ended: nothing more can be written
                    self._failure = error
                    return

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
        assert self._child is not None
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
