"""`t3rl runs`: the run dirs under a runs dir with each stage's status; `t3rl runs show DIR`: one run.

    t3rl runs [--runs-dir DIR]          every run (<name>/<timestamp>, and sweep points <name>/sweep-*/pNN)
    t3rl runs show DIR                  its manifest and per-stage state (status, attempts, job ids, logs)

Reads only what the run dirs hold (state.json, config.yaml, manifest.json); nothing is imported
beyond rich and PyYAML. A stage recorded as running while no t3rl process holds the run dir's lock
is shown as `interrupted` (its t3rl process died; `t3rl run --run-dir DIR` resumes it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from launch.files import is_locked

if TYPE_CHECKING:
    from rich.console import Console

# Run dirs sit at <runs>/<name>/<timestamp> and, for sweeps, <runs>/<name>/<sweep>/pNN.
RUN_DIR_PATTERNS = ("*/*/config.yaml", "*/*/*/config.yaml")
MARKS = {
    "succeeded": "[green]✓[/]",
    "skipped": "[green]=[/]",
    "running": "[cyan]▶[/]",
    "interrupted": "[magenta]![/]",
    "failed": "[red]✗[/]",
    "stopped": "[yellow]■[/]",
    "planned": "[dim]·[/]",
}


@dataclass(frozen=True)
class StageView:
    name: str
    status: str
    record: dict[str, Any]


@dataclass(frozen=True)
class RunView:
    """What `t3rl runs` shows of one run dir."""

    path: Path
    manifest: dict[str, Any]
    stages: tuple[StageView, ...]

    @property
    def status(self) -> str:
        statuses = [s.status for s in self.stages]
        for status in ("running", "interrupted", "failed", "stopped"):
            if status in statuses:
                return status
        if statuses and all(s in ("succeeded", "skipped") for s in statuses):
            return "succeeded"
        return "planned"


def load_run(path: Path) -> RunView:
    """A run dir's stages in config order (stages never started are `planned`)."""
    import yaml

    config = yaml.safe_load((path / "config.yaml").read_text()) or {}
    state_file = path / "state.json"
    records: dict[str, dict[str, Any]] = {}
    if state_file.exists():
        records = json.loads(state_file.read_text()).get("stages", {})
    active = is_locked(path / ".lock")
    names = list(config.get("stages") or {}) + [n for n in records if n not in (config.get("stages") or {})]
    stages = []
    for name in names:
        record = records.get(name, {})
        status = record.get("status", "planned")
        if status == "running" and not active:
            status = "interrupted"
        stages.append(StageView(name, status, record))
    manifest_file = path / "manifest.json"
    manifest = json.loads(manifest_file.read_text()) if manifest_file.exists() else {}
    return RunView(path, manifest, tuple(stages))


def find_runs(runs_dir: Path) -> list[Path]:
    """Every run dir below `runs_dir`, newest first."""
    found = {p.parent for pattern in RUN_DIR_PATTERNS for p in runs_dir.glob(pattern)}
    return sorted(found, key=lambda p: (p / "config.yaml").stat().st_mtime, reverse=True)


def default_runs_dir() -> Path:
    """conf/paths/default.yaml's default: $T3RL_RUNS_DIR, else ./runs."""
    return Path(os.environ.get("T3RL_RUNS_DIR", "runs"))


def register(app: typer.Typer) -> None:
    runs_app = typer.Typer(help="List run directories and their stages' status.", no_args_is_help=False)
    app.add_typer(runs_app, name="runs")

    @runs_app.callback(invoke_without_command=True)
    def runs(
        ctx: typer.Context,
        runs_dir: Annotated[
            Path | None,
            typer.Option("--runs-dir", help="Where run dirs live (default: $T3RL_RUNS_DIR or ./runs)."),
        ] = None,
    ) -> None:
        """Every run under the runs dir, newest first, with one mark per stage."""
        if ctx.invoked_subcommand is not None:
            return
        raise typer.Exit(list_runs(runs_dir or default_runs_dir()))

    @runs_app.command("show")
    def show(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
        """The run's manifest (code, launcher host, planned topology, seeds), its attempts and each
        stage's record."""
        raise typer.Exit(show_run(run_dir))


def list_runs(runs_dir: Path, console: Console | None = None) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(highlight=False)
    if not runs_dir.is_dir():
        Console(stderr=True).print(f"[red]error:[/] no runs dir at {runs_dir}", soft_wrap=True)
        return 1
    paths = find_runs(runs_dir)
    table = Table(title=f"{len(paths)} runs in {runs_dir}", title_justify="left")
    for column in ("run", "created", "status", "stages"):
        table.add_column(column, overflow="fold")
    for path in paths:
        view = load_run(path)
        stages = "  ".join(f"{MARKS.get(s.status, '?')} {escape(s.name)}" for s in view.stages)
        created = str(view.manifest.get("created_at", ""))[:19].replace("T", " ")
        table.add_row(escape(str(path.relative_to(runs_dir))), created, _status(view.status), stages)
    console.print(table)
    console.print("marks: " + "  ".join(f"{mark} {name}" for name, mark in MARKS.items()), soft_wrap=True)
    return 0


def show_run(path: Path, console: Console | None = None) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(highlight=False)
    if not (path / "config.yaml").exists():
        Console(stderr=True).print(
            f"[red]error:[/] {path} is not a t3rl run dir (no config.yaml)", soft_wrap=True
        )
        return 1
    view = load_run(path)
    manifest = view.manifest
    console.print(f"[bold]{escape(str(path.resolve()))}[/]: {_status(view.status)}", soft_wrap=True)
    git = manifest.get("git") or {}
    for label, value in (
        ("run", manifest.get("run_id") or manifest.get("run")),
        ("created", manifest.get("created_at")),
        ("updated", manifest.get("updated_at")),
        ("git", f"{git.get('sha', '?')}{' (dirty)' if git.get('dirty') else ''}" if git else None),
        ("t3rl", manifest.get("t3rl_version")),
        ("launcher", (manifest.get("launcher") or manifest.get("host") or {}).get("hostname")),
        ("overrides", " ".join(manifest.get("overrides") or []) or None),
        ("planned", json.dumps(topology) if (topology := _topology(manifest)) else None),
        ("seeds", json.dumps(manifest.get("seeds")) if manifest.get("seeds") else None),
    ):
        if value:
            console.print(f"  {label:<10} {escape(str(value))}", soft_wrap=True)
    history = _history(path)
    if len(history) > 1:
        console.print("  attempts (overrides given → in force):", soft_wrap=True)
        for entry in history:
            given = " ".join(entry.get("given") or []) or "(none)"
            console.print(f"    {entry.get('attempt')}  {entry.get('at')}  {escape(given)}", soft_wrap=True)
    table = Table(title="stages", title_justify="left")
    for column in ("stage", "status", "attempts", "started", "finished", "job", "message"):
        table.add_column(column, overflow="fold")
    for stage in view.stages:
        record = stage.record
        job = " ".join(
            f"{k}={v}" for k, v in (record.get("handle") or {}).items() if k in ("ray_job", "slurm_job")
        )
        table.add_row(
            escape(stage.name),
            _status(stage.status),
            str(record.get("attempts", "")),
            str(record.get("started_at") or ""),
            str(record.get("finished_at") or ""),
            escape(job),
            escape(str(record.get("message") or "")),
        )
    console.print(table)
    console.print(f"logs: {path / 'stages' / '<stage>' / 'log.txt'}", soft_wrap=True)
    return 0


def _topology(manifest: dict[str, Any]) -> Any:
    """What the config asked of the cluster (older manifests call it `topology`)."""
    return manifest.get("planned_topology") or manifest.get("topology")


def _history(path: Path) -> list[dict[str, Any]]:
    import yaml

    file = path / "overrides.history.yaml"
    if not file.exists():
        return []
    try:
        data = yaml.safe_load(file.read_text())
    except yaml.YAMLError:
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _status(status: str) -> str:
    return f"{MARKS.get(status, '?')} {status}"
