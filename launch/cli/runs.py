"""`t3rl runs`: the run dirs under a runs dir with each stage's status; `t3rl runs show DIR`: one run.

    t3rl runs [--runs-dir DIR] [--name GLOB] [--status S] [--where KEY=VALUE…] [--metric KEY]
                                        every run (<name>/<timestamp>, and sweep points <name>/sweep-*/pNN)
                                        with each eval stage's metric (default overall.accuracy, n tasks)
    t3rl runs diff A B                  the config keys that differ, with the file/override that set each
    t3rl runs show DIR                  its manifest, attempts and per-stage state (status, attempts, job ids,
                                        logs); a finished stage whose outputs no longer match is `damaged`

Reads only what the run dirs hold (state.json, config.yaml, manifest.json; `show` also digests the
recorded outputs, launch.run.output_digest); nothing is imported beyond rich and PyYAML. A stage
recorded as running while no t3rl process holds the run dir's lock is shown as `interrupted` (its
t3rl process died; `t3rl run --run-dir DIR` resumes it); a sweep point its sweep records as running
while the sweep's launcher is gone is `interrupted (launcher gone)` (launch.run.sweep_liveness), and
`t3rl runs show <sweep dir>` lists the sweep's points so.
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
    "damaged": "[red]≠[/]",
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
    # A sweep point's status in its sweep's record when that record is stale (see sweep_liveness).
    sweep_status: str | None = None

    @property
    def status(self) -> str:
        if self.sweep_status is not None:
            return self.sweep_status
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
    return RunView(path, manifest, tuple(stages), _gone_sweep_point(path))


def _gone_sweep_point(path: Path) -> str | None:
    """LAUNCHER_GONE for a sweep point its sweep records as running or waiting with no launcher left."""
    from launch.run.sweep_liveness import LAUNCHER_GONE, points_now

    if not (path.parent / "sweep.json").exists():
        return None
    try:
        points = points_now(path.parent)
    except (OSError, ValueError):
        return None
    mine = [p for p in points if p.get("run_dir") and Path(p["run_dir"]).resolve() == path.resolve()]
    return LAUNCHER_GONE if mine and mine[0]["status"] == LAUNCHER_GONE else None


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
        name: Annotated[
            str | None, typer.Option("--name", help="Only runs whose path matches this glob, e.g. 'stage1*'.")
        ] = None,
        status: Annotated[
            str | None, typer.Option("--status", help="Only runs with this status (succeeded, failed, …).")
        ] = None,
        where: Annotated[
            list[str] | None,
            typer.Option("--where", help="Only runs whose config has KEY=VALUE, e.g. reward.name=binary."),
        ] = None,
        metric: Annotated[
            str, typer.Option("--metric", help="The eval summary key shown per eval stage.")
        ] = "overall.accuracy",
    ) -> None:
        """Every run under the runs dir, newest first: one mark per stage, each eval stage's metric."""
        if ctx.invoked_subcommand is not None:
            return
        filters = RunFilter(name=name, status=status, where=tuple(where or ()))
        raise typer.Exit(list_runs(runs_dir or default_runs_dir(), filters=filters, metric=metric))

    @runs_app.command("diff")
    def diff(
        a: Annotated[Path, typer.Argument(help="A run directory.")],
        b: Annotated[Path, typer.Argument(help="Another run directory.")],
    ) -> None:
        """How two runs' configs differ, key by key, with the file or override that set each side."""
        from launch.cli.runs_diff import diff_runs

        raise typer.Exit(diff_runs(a, b))

    @runs_app.command("show")
    def show(run_dir: Annotated[Path, typer.Argument(help="A run directory, or a sweep dir.")]) -> None:
        """The run's manifest (code, launcher host, planned topology, seeds), its attempts and each
        stage's record; for a sweep dir, each point's status, stage, job and metric."""
        raise typer.Exit(show_run(run_dir))


@dataclass(frozen=True)
class RunFilter:
    """Which runs `t3rl runs` lists."""

    # fnmatch glob on the run's path below the runs dir.
    name: str | None = None
    status: str | None = None
    # KEY=VALUE pairs the run's config.yaml must hold (VALUE compared as YAML).
    where: tuple[str, ...] = ()

    def keeps(self, relative: str, view: RunView) -> bool:
        import fnmatch

        import yaml

        if (
            self.name
            and not fnmatch.fnmatch(relative, self.name)
            and not fnmatch.fnmatch(relative, f"{self.name}/*")
        ):
            return False
        # `--status interrupted` also keeps `interrupted (launcher gone)`.
        if self.status and self.status not in (view.status, view.status.split(" ")[0]):
            return False
        if self.where:
            config = yaml.safe_load((view.path / "config.yaml").read_text()) or {}
            for condition in self.where:
                key, _, wanted = condition.partition("=")
                if _lookup(config, key) != yaml.safe_load(wanted):
                    return False
        return True


def eval_metrics(view: RunView, metric: str) -> list[tuple[str, float | None, int | None]]:
    """(eval stage, its summary's `metric`, its task count) for each eval stage that wrote a summary."""
    found = []
    for stage in view.stages:
        summary_file = view.path / "stages" / stage.name / "summary.json"
        if not summary_file.exists():
            continue
        try:
            summary = json.loads(summary_file.read_text())
        except ValueError:
            continue
        value = _lookup(summary, metric)
        tasks = _lookup(summary, "overall.tasks")
        found.append(
            (
                stage.name,
                float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None,
                tasks if isinstance(tasks, int) else None,
            )
        )
    return found


def _lookup(node: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def list_runs(
    runs_dir: Path,
    console: Console | None = None,
    *,
    filters: RunFilter | None = None,
    metric: str = "overall.accuracy",
) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(highlight=False)
    filters = filters or RunFilter()
    if not runs_dir.is_dir():
        Console(stderr=True).print(f"[red]error:[/] no runs dir at {runs_dir}", soft_wrap=True)
        return 1
    rows = []
    for path in find_runs(runs_dir):
        view = load_run(path)
        relative = str(path.relative_to(runs_dir))
        if filters.keeps(relative, view):
            rows.append((relative, view))
    table = Table(title=f"{len(rows)} runs in {runs_dir}", title_justify="left")
    for column in ("run", "created", "status", "stages", metric):
        table.add_column(column, overflow="fold")
    for relative, view in rows:
        stages = "  ".join(f"{MARKS.get(s.status, '?')} {escape(s.name)}" for s in view.stages)
        created = str(view.manifest.get("created_at", ""))[:19].replace("T", " ")
        metrics = "\n".join(
            f"{escape(name)} {'–' if value is None else f'{value:.3f}'}" + (f" (n={n})" if n else "")
            for name, value, n in eval_metrics(view, metric)
        )
        table.add_row(escape(relative), created, _status(view.status), stages, metrics)
    console.print(table)
    console.print("marks: " + "  ".join(f"{mark} {name}" for name, mark in MARKS.items()), soft_wrap=True)
    return 0


def show_run(path: Path, console: Console | None = None) -> int:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console(highlight=False)
    if not (path / "config.yaml").exists() and (path / "sweep.json").exists():
        return show_sweep(path, console)
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
        status, message = stage.status, str(record.get("message") or "")
        damage = _damage(path, record) if status in ("succeeded", "skipped") else None
        if damage is not None:
            status, message = "damaged", f"{damage} (`t3rl run --run-dir` reruns it)"
        table.add_row(
            escape(stage.name),
            _status(status),
            str(record.get("attempts", "")),
            str(record.get("started_at") or ""),
            str(record.get("finished_at") or ""),
            escape(job),
            escape(message),
        )
    console.print(table)
    console.print(f"logs: {path / 'stages' / '<stage>' / 'log.txt'}", soft_wrap=True)
    return 0


def show_sweep(path: Path, console: Console) -> int:
    """A sweep dir: each point's status as it is now (a dead launcher's `running` point is
    `interrupted (launcher gone)`), stage, job, metric and run dir."""
    from rich.markup import escape
    from rich.table import Table

    from launch.run.sweep_liveness import LAUNCHER_GONE, launcher_alive, points_now

    data = json.loads((path / "sweep.json").read_text())
    points = points_now(path)
    launcher = "running" if launcher_alive(path) else "not running"
    console.print(
        f"[bold]{escape(str(path.resolve()))}[/]: sweep {escape(str(data.get('name')))}", soft_wrap=True
    )
    console.print(f"  launcher   {launcher}", soft_wrap=True)
    metric = str(data.get("metric") or "metric")
    table = Table(title="points", title_justify="left")
    for column in ("#", "point", "status", "stage", "job", metric, "run dir"):
        table.add_column(column, overflow="fold")
    for point in points:
        value = point.get("metric")
        status = point["status"]
        table.add_row(
            str(point.get("index")),
            escape(" ".join(point.get("varying") or [])),
            _status(status) + (f": {escape(str(point['error']))}" if point.get("error") else ""),
            escape(str(point.get("stage") or "")),
            escape(str(point.get("job") or "")),
            "" if value is None else f"{value:.4g}",
            escape(os.path.relpath(point["run_dir"], path) if point.get("run_dir") else ""),
        )
    console.print(table)
    if any(p["status"] == LAUNCHER_GONE for p in points):
        console.print(f"resume it with: t3rl run --run-dir {path}", soft_wrap=True)
    return 0


def _damage(path: Path, record: dict[str, Any]) -> str | None:
    """How a finished stage's outputs differ from the digests recorded when it finished, if they do."""
    from launch.run.output_digest import FileHashes, first_mismatch

    outputs = record.get("outputs") or {}
    hashes = FileHashes.load(path / "file_hashes.json")
    damage = first_mismatch(outputs, list(outputs), hashes) if isinstance(outputs, dict) else None
    return damage.replace(f"{path.resolve()}/", "") if damage else None


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
    # `interrupted (launcher gone)` takes the mark of `interrupted`.
    return f"{MARKS.get(status, MARKS.get(status.split(' ')[0], '?'))} {status}"
