"""The published results of a recipe on the terminal: what `t3rl plan` shows of an experiment's
`eval.published` declaration, and the verdicts `t3rl eval --published` prints after an eval."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from launch.checks.eval_configs import eval_configs
from launch.output.markup import escape

if TYPE_CHECKING:
    from rich.console import Console

    from launch.config.schema import RunConfig
    from launch.output.plain import PlainConsole
    from t3rl_core.eval.config import EvalConfig
    from t3rl_core.eval.published import PublishedConfig


def show_published(run: RunConfig, console: Console | PlainConsole) -> None:
    """The published results each eval stage should reproduce, a few lines each (nothing without any)."""
    stages = [(name, c) for name, c, _ in eval_configs(run) if name is not None and c.published is not None]
    if not stages:
        return
    console.print(
        "[bold]published results[/] (eval.published; the eval gives the verdict on each in summary.json, "
        "report.md and `t3rl runs`: reproduced when it lies in the eval's confidence interval, else not "
        "reproduced, or not comparable and why)",
        soft_wrap=True,
    )
    for name, config in stages:
        published = config.published
        assert published is not None
        for result in published.results:
            role = "target" if result.label == published.target else "reference"
            values = ", ".join(
                f"{v.scope} {v.value:.2%}" + (f" ({v.tasks} tasks)" if v.tasks else "") for v in result.values
            )
            split = result.split or "no t3rl split"
            other = "" if result.split in (None, config.split) else f"; this stage evaluates {config.split}"
            for line in (
                f"  {name} · {result.label} [{role}]: {result.model}",
                f"      {values}",
                f"      {result.metric.describe()} · {result.benchmark} ({split}{other})",
                f"      source: {result.source}",
            ):
                console.print(escape(line), soft_wrap=True)


def require_published(config: EvalConfig) -> PublishedConfig:
    """`t3rl eval --published` needs a declaration: exit 2 naming where it comes from otherwise."""
    import typer  # lazy: typer, only when t3rl eval refuses a published reference

    if config.published is None:
        raise typer.BadParameter(
            "the composed config declares no published result (eval.published): choose an experiment "
            "that re-expresses a published system, e.g. +experiment=stage1_bfcl, or mount one with "
            "+published@eval.published=t3rl_bfcl",
            param_hint="--published",
        )
    return config.published


def print_verdicts(summary: Mapping[str, Any], console: Console) -> None:
    """One row per published value: its verdict, the measured value with its interval and the gap; then
    why each value that is not comparable is not."""
    from rich.table import Table  # lazy: rich's table, only for the verdicts of `t3rl eval --published`

    found = (summary.get("published") or {}).get("verdicts") or []
    table = Table(title="published results", title_justify="left")
    for column in ("result", "scope", "metric", "published", "measured [interval]", "gap", "verdict"):
        table.add_column(column, overflow="fold")
    colours = {"reproduced": "green", "not reproduced": "red", "not comparable": "yellow"}
    reasons = []
    for verdict in found:
        interval = verdict.get("interval")
        measured = (
            f"{verdict['measured']:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"
            if interval is not None
            else "–"
        )
        table.add_row(
            escape(f"{verdict['label']} ({verdict['role']})"),
            escape(verdict["scope"]),
            escape(verdict["metric"]),
            f"{verdict['published']:.3f}",
            measured,
            f"{verdict['gap']:+.3f}" if verdict.get("gap") is not None else "–",
            f"[{colours.get(verdict['status'], 'white')}]{verdict['status']}[/]",
        )
        reasons += [f"{verdict['label']} · {verdict['scope']}: {why}" for why in verdict.get("why") or []]
    console.print(table)
    for line in reasons:
        console.print(f"  not comparable, {escape(line)}", soft_wrap=True)
