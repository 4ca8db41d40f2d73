"""The live table of a sweep's points: a redrawn rich table on a terminal, one line per change otherwise."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from launch.run.parallel import PointProgress

COLOURS = {
    "planned": "dim",
    "waiting": "magenta",
    "running": "cyan",
    "succeeded": "green",
    "failed": "red",
    "interrupted": "yellow",
}


def points_table(
    title: str,
    labels: Mapping[int, str],
    progress: Mapping[int, PointProgress],
    metrics: Mapping[int, float | None],
    metric_name: str,
) -> Table:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("#", "point", "status", "stage", "job", "time", metric_name):
        table.add_column(column, overflow="fold")
    now = time.time()
    for index in sorted(progress):
        point = progress[index]
        elapsed = point.elapsed(now)
        metric = metrics.get(index)
        table.add_row(
            str(index),
            escape(labels[index]),
            f"[{COLOURS.get(point.status, 'white')}]{point.status}[/]",
            escape(point.stage),
            escape(point.job),
            "" if elapsed is None else f"{elapsed:.0f}s",
            "" if metric is None else f"{metric:.4g}",
        )
    return table


class PlainLines:
    """One line per point whose status or stage changed (logs, CI, pipes)."""

    def __init__(self, console: Console, labels: Mapping[int, str]) -> None:
        self.console = console
        self.labels = labels
        self.seen: dict[int, tuple[str, str, str]] = {}

    def update(self, progress: Mapping[int, PointProgress]) -> None:
        for index in sorted(progress):
            point = progress[index]
            key = (point.status, point.stage, point.job)
            if self.seen.get(index) == key or point.status == "planned":
                continue
            self.seen[index] = key
            detail = " ".join(x for x in (point.stage, f"[{point.job}]" if point.job else "") if x)
            self.console.print(
                f"point {index} ({self.labels[index]}): {point.status} {detail}".rstrip(),
                soft_wrap=True,
                highlight=False,
                markup=False,
            )


@contextmanager
def live_points(
    console: Console, title: str, labels: Mapping[int, str], metric_name: str
) -> Iterator[Callable[[Mapping[int, PointProgress]], None]]:
    """A callback that shows the points' progress: a live table on a terminal, else plain lines."""
    if not console.is_terminal:
        yield PlainLines(console, labels).update
        return
    from rich.live import Live

    empty: dict[int, float | None] = {}
    with Live(console=console, refresh_per_second=2, transient=False) as live:

        def update(progress: Mapping[int, PointProgress]) -> None:
            live.update(points_table(title, labels, progress, empty, metric_name))

        yield update
