"""One run: a new run dir, or an existing one resumed with its own overrides; then what comes next."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from launch.run.steps import execute, plan_run, report_result, resolve_overrides, t3rl_root, write_run_dir

if TYPE_CHECKING:
    from rich.console import Console

    from launch.checks.resolve import Resolved
    from launch.run.rundir import RunDir


def run_single(
    overrides: list[str],
    config_dirs: list[str],
    run_dir_path: Path | None,
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console,
) -> int:
    from launch.run.rundir import RunDir

    existing = RunDir(run_dir_path) if run_dir_path is not None else None
    if existing is not None and existing.exists() and not overrides:
        overrides = existing.read_overrides()
        config_dirs = config_dirs or list(existing.read_manifest().get("config_dirs", []))
        console.print(
            f"resuming [bold]{existing.path}[/] with its overrides: {' '.join(overrides) or '(none)'}"
        )
    resolved = resolve_overrides(overrides, config_dirs, console)
    run_dir = existing or _new_run_dir(resolved)
    run_dir.path.mkdir(parents=True, exist_ok=True)
    try:
        plan = plan_run(resolved, run_dir)
    except BaseException:
        if existing is None:
            run_dir.remove_if_empty()
        raise
    write_run_dir(run_dir, resolved, plan, config_dirs)
    result = execute(plan, run_dir, resolved, from_stage, only, dry=dry, console=console)
    code = report_result(result, plan, run_dir, console, dry=dry)
    if code == 0 and not dry and resolved.run.next_experiment:
        _show_next(resolved.run.next_experiment, config_dirs, console)
    return code


def _new_run_dir(resolved: Resolved) -> RunDir:
    from launch.run.rundir import RunDir

    return RunDir.new(Path(resolved.run.paths.runs_dir).expanduser().resolve(), resolved.run.name)


def _show_next(experiment: str, config_dirs: list[str], console: Console) -> None:
    """The plan of the follow-up experiment (e.g. the GPU pipeline after the CPU quickstart)."""
    import os
    import sys

    from rich.table import Table

    from launch.checks.resolve import resolve
    from launch.plan.build import PlanContext, build_plan

    resolved = resolve([f"+experiment={experiment}"], config_dirs)
    runs = Path(resolved.run.paths.runs_dir).expanduser().resolve()
    ctx = PlanContext(
        run_dir=runs / experiment / "<timestamp>",
        base_dir=Path.cwd(),
        t3rl_root=str(t3rl_root()),
        python=sys.executable,
        run_id=f"{experiment}-next",
        environ=dict(os.environ),
    )
    plan = build_plan(resolved.run, ctx)
    table = Table(title=f"next: +experiment={experiment}", title_justify="left")
    for column in ("stage", "kind", "what", "GPUs"):
        table.add_column(column)
    for stage in plan.stages:
        table.add_row(stage.name, stage.kind, stage.summary, str(stage.gpus or ""))
    console.print(table)
    console.print(f"every command: t3rl plan +experiment={experiment}", soft_wrap=True)
