"""A neighbour for the benchmarks: a child process that keeps one core busy while a measurement runs.

The development machine has 2 cores shared with other work; a target that only holds with the second
core free is not met. `busy_core()` starts one spinning child and stops it (by its own pid) on exit;
`Neighbour` keeps one child for a whole run and pauses or resumes it (SIGSTOP / SIGCONT), so that
measurements can alternate idle and busy episode by episode.

The spinner is a plain child, in the benchmark's own session. With the kernel's autogroups on
(`/proc/sys/kernel/sched_autogroup_enabled`), the CPU is shared between sessions first: the spinner
then takes its share out of the measured process's session, not out of the machine's other sessions.
`busy_core(own_session=True)` starts it in a session of its own instead (`setsid`), as a neighbour
started from another terminal or by another user runs: the same core kept busy, weighed apart.
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
def busy_core(own_session: bool = False) -> Iterator[None]:
    child = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=own_session)
    try:
        yield
    finally:
        child.kill()
        child.wait()


def condition(busy: bool, own_session: bool = False) -> AbstractContextManager[None]:
    """`busy_core(own_session)` when `busy`, else nothing."""
    return busy_core(own_session) if busy else nullcontext()


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


def label(busy: bool, own_session: bool = False) -> str:
    if not busy:
        return "idle"
    return "one core busy, spinner in its own session" if own_session else "one core busy"
