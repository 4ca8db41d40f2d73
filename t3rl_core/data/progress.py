"""Progress of a data preparation, per row, for whoever watches it.

A dataset's `prepare` counts its work through `Steps(total, what)` (or `counted(items, …)`); the
caller of the preparation decides what the counts become (`reporting(sink)`): `python -m
t3rl_core.data` prints `data progress: 120/800 rows built, ETA 3s` lines on stdout (a few seconds
apart, and each phase's end) when stderr is not a terminal (the form of `eval progress: …`, which
`launch` turns into a live bar under a running stage) and draws a rich bar when it is. Nobody
watching (a library call, a test) costs one context-variable read per phase.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO, TypeVar

from t3rl_core.progress_format import DATA_LABEL, counted_line

T = TypeVar("T")

# (done, total, what) after each counted item of a phase.
Sink = Callable[[int, int, str], None]

_SINK: ContextVar[Sink | None] = ContextVar("t3rl_data_progress", default=None)


@contextmanager
def reporting(sink: Sink) -> Iterator[None]:
    """Within the block, every phase a preparation counts goes to `sink`."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


class Steps:
    """One phase of a preparation: `total` items of `what` (e.g. "rows built")."""

    def __init__(self, total: int, what: str) -> None:
        self.total, self.what, self.done = total, what, 0
        self._sink = _SINK.get()
        if self._sink is not None:
            self._sink(0, total, what)

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._sink is not None:
            self._sink(self.done, self.total, self.what)


def counted(items: Iterable[T], total: int, what: str) -> Iterator[T]:
    """`items`, each counted as one step of a phase of `total`."""
    phase = Steps(total, what)
    for item in items:
        yield item
        phase.advance()


class ProgressLines:
    """A sink printing `data progress: 120/800 rows built, ETA 3s` at most once every `every_s` seconds,
    and each phase's last count, as tqdm and rich do when they write to a log: a 3-second preparation
    prints its two phase ends, a long one a line every few seconds. Each line is also what `launch`
    turns into a live bar under a running stage."""

    def __init__(
        self,
        out: TextIO | None = None,
        every_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        label: str = DATA_LABEL,
    ) -> None:
        self.out, self.every_s, self.clock, self.label = out, every_s, clock, label
        self._phase: tuple[int, str] | None = None
        self._started = 0.0
        # When the last line was printed (any phase); the first line waits `every_s` from the start.
        self._last_shown: float | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        now = self.clock()
        if (total, what) != self._phase:
            self._phase, self._started = (total, what), now
        if self._last_shown is None:
            self._last_shown = now
        last = done >= total
        if not last and now - self._last_shown < self.every_s:
            return
        self._last_shown = now
        rate = done / max(now - self._started, 1e-9)
        eta = (total - done) / rate if not last and rate > 0 else None
        self._print(done, total, what, eta)

    def _print(self, done: int, total: int, what: str, eta: float | None) -> None:
        out = self.out or sys.stdout
        out.write(counted_line(self.label, done, total, what, eta) + "\n")
        out.flush()
