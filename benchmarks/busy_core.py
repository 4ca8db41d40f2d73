"""A neighbour for the benchmarks: a child process that keeps one core busy while a measurement runs.

The development machine has 2 cores shared with other work; a target that only holds with the second
core free is not met. `busy_core()` starts one spinning child and stops it (by its own pid) on exit;
`Neighbour` keeps one child for a whole run and pauses or resumes it (SIGSTOP / SIGCONT), so that
measurements can alternate idle and busy episode by episode.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import TracebackType

SPIN = "while True:\n    pass\n"


@contextmanager
def busy_core() -> Iterator[None]:
    child = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        yield
    finally:
        child.kill()
        child.wait()


def condition(busy: bool) -> AbstractContextManager[None]:
    """`busy_core()` when `busy`, else nothing."""
    return busy_core() if busy else nullcontext()


class Neighbour:
    """One spinning child, paused until `busy(True)`; killed on exit."""

    def __enter__(self) -> Neighbour:
        self.child = subprocess.Popen([sys.executable, "-c", SPIN])
        self.busy(False)
        return self

    def busy(self, on: bool) -> None:
        os.kill(self.child.pid, signal.SIGCONT if on else signal.SIGSTOP)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.child.kill()
        self.child.wait()


def label(busy: bool) -> str:
    return "one core busy" if busy else "idle"
