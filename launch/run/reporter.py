"""The pipeline's progress on the terminal (rich), or as plain text in a pipe or a log
(launch.output.plain)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from launch.output.markup import escape
from launch.output.table import TextTable
from t3rl_core.counts import counted

if TYPE_CHECKING:
    from rich.console import Console

    from launch.output.plain import PlainConsole
    from launch.plan.build import Plan
    from launch.plan.stages import Stage
    from launch.run.executors.base import StageResult
    from launch.run.pipeline import Decision


class RichReporter:
    """The pipeline's progress on the terminal: the decision table, then one line per stage."""

    def __init__(self, console: Console | PlainConsole, show_commands: bool) -> None:
        self.console = console
        self.show_commands = show_commands

    def decisions(self, plan: Plan, decisions: list[Decision]) -> None:
        table = TextTable(
            f"{plan.name}: {counted(len(plan.stages), 'stage')}",
            ("#", "stage", "kind", "action", "what", "GPUs"),
        )
        colours = {
            "run": "green",
            "resume": "yellow",
            "finish": "yellow",
            "cached": "dim",
            "complete": "dim",
            "outside": "dim",
        }
        for i, (stage, decision) in enumerate(zip(plan.stages, decisions, strict=True)):
            action = f"[{colours[decision.action]}]{decision.action}[/] [dim]({escape(decision.reason)})[/]"
            table.add_row(
                str(i), stage.name, stage.kind, action, escape(stage.summary), str(stage.gpus or "")
            )
        self.console.print(table)
        if self.show_commands:
            # One print of every line: each print renders, writes and scrubs on its own (a plan's ~50
            # lines printed one by one cost a cold `t3rl plan` more than its table).
            lines = []
            for stage in plan.stages:
                lines.append(f"[bold]{escape(stage.name)}[/]")
                lines += [f"  [cyan]{escape(line)}[/]" for line in _short(stage)]
                # e.g. how plugin code reaches the stage's job
                lines += [f"  [dim]# {escape(note)}[/]" for note in stage.notes]
            self.console.print("\n".join(lines), soft_wrap=True)

    def stage_started(self, stage: Stage, decision: Decision, attempt: int) -> None:
        again = f", attempt {attempt}" if attempt > 1 else ""
        self.console.rule(f"[bold]{stage.name}[/] ({stage.kind}{again}): {escape(decision.reason)}")

    def stage_finished(self, stage: Stage, result: StageResult, seconds: float) -> None:
        mark = {"succeeded": "[green]✓[/]", "failed": "[red]✗[/]", "stopped": "[yellow]■[/]"}.get(
            result.status, ""
        )
        detail = f": {escape(result.message)}" if result.message else ""
        self.console.print(f"{mark} {stage.name} {result.status} in {seconds:.1f}s{detail}", soft_wrap=True)

    def note(self, stage: Stage, text: str) -> None:
        self.console.print(f"[yellow]{stage.name}[/]: {escape(text)}", soft_wrap=True, highlight=False)


def _short(stage: Stage) -> list[str]:
    """Each command on one line, long argvs and long tokens shortened (plan.sh has them whole)."""
    lines = []
    for command in stage.commands:
        if isinstance(command, str):
            lines.append(command)
            continue
        shown = [t if len(t) <= 60 else t[:40] + "…" for t in command[:8]]
        rest = f" … (+{len(command) - 8} tokens)" if len(command) > 8 else ""
        lines.append(shlex.join(shown) + rest)
    return lines
