"""The live table of a sweep's points: a redrawn rich table on a terminal, one line per change otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.live import Live
from rich.markup import escape
from rich.table import Table

from launch.run.parallel import clock

if TYPE_CHECKING:
    from rich.console import Console

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
    table = Table(title=title, title_justify="left")
    # Why a point failed or was interrupted, once one has (the live table stays narrow until then).
    reasons = {i: p.error for i, p in progress.items() if p.error and p.status != "succeeded"}
    for column in (
        "#",
        "point",
        "status",
        "stage",
        "job",
        "time",
        metric_name,
        *(["reason"] if reasons else []),
    ):
        table.add_column(column, overflow="fold")
    now = clock()
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
            *([escape(reasons.get(index) or "")] if reasons else []),
        )
    return table


class PlainLines:
    """One line per point whose status or stage changed (logs, CI, pipes); a scored point's line names
    its metric."""

    def __init__(
        self,
        console: Console,
        labels: Mapping[int, str],
        metrics: Mapping[int, float | None] | None = None,
        metric_name: str = "metric",
    ) -> None:
        self.console = console
        self.labels = labels
        self.metrics = metrics if metrics is not None else {}
        self.metric_name = metric_name
        self.seen: dict[int, tuple[str, str, str]] = {}

    def update(self, progress: Mapping[int, PointProgress]) -> None:
        for index in sorted(progress):
            point = progress[index]
            key = (point.status, point.stage, point.job)
            if self.seen.get(index) == key or point.status == "planned":
                continue
            self.seen[index] = key
            metric = self.metrics.get(index)
            scored = f"{self.metric_name}={metric:.4g}" if metric is not None else ""
            detail = " ".join(x for x in (point.stage, f"[{point.job}]" if point.job else "", scored) if x)
            self.console.print(
                f"point {index} ({self.labels[index]}): {point.status} {detail}".rstrip(),
                soft_wrap=True,
                highlight=False,
                markup=False,
            )


@contextmanager
def live_points(
    console: Console,
    title: str,
    labels: Mapping[int, str],
    metric_name: str,
    metrics: Mapping[int, float | None] | None = None,
) -> Iterator[Callable[[Mapping[int, PointProgress]], None]]:
    """A callback that shows the points' progress: a live table on a terminal, else plain lines.
    `metrics` (filled by the caller as points are scored) is read at every call."""
    scores: Mapping[int, float | None] = metrics if metrics is not None else {}
    if not console.is_terminal:
        yield PlainLines(console, labels, scores, metric_name).update
        return

    with Live(console=console, refresh_per_second=2, transient=False) as live:

        def update(progress: Mapping[int, PointProgress]) -> None:
            # Drawn at once: a change is shown when it happens (the timer only advances the times).
            live.update(points_table(title, labels, progress, scores, metric_name), refresh=True)

        yield update
