"""A neighbour for the benchmarks: a child process that keeps one core busy while a measurement runs.

The development machine has 2 cores shared with other work; a target that only holds with the second
core free is not met. `busy_core()` starts one spinning child and stops it (by its own pid) on exit.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

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


def label(busy: bool) -> str:
    return "one core busy" if busy else "idle"
