"""`t3rl runs`: the run dirs under a runs dir with each stage's status; `t3rl runs show DIR`: one run.

    t3rl runs [--runs-dir DIR] [--name GLOB] [--status S] [--where KEY=VALUE…] [--metric KEY]
                                        every run (<name>/<timestamp>, sweep points <name>/sweep-*/pNN and
                                        `t3rl eval` records eval-*) with each eval's metric (default
                                        overall.accuracy, n tasks); a filter or metric that can match
                                        nothing exits 2 (launch.cli.runs_filter)
    t3rl runs diff A B                  the config keys that differ, with the file/override that set each
    t3rl runs show DIR                  its manifest, attempts and per-stage state (status, attempts, job ids,
                                        logs); a finished stage whose outputs no longer match is `damaged`

Reads only what the run dirs hold (state.json, config.yaml, manifest.json, and the recorded outputs'
digests, as a resume and a sweep point's outcome read them: launch.run.output_digest.output_damage; an
output unchanged since it was hashed is only stat'ed; it writes nothing there: the hashes a listing
computes for a run dir copied elsewhere, and the configs it parsed, are kept in t3rl's cache dir by
launch.cli.runs_configs); nothing is
imported beyond rich and PyYAML. A
finished stage whose outputs no longer match is `damaged`, and so is its run, named with the first
damage below the table (`t3rl run --run-dir` reruns it). A stage
recorded as running while no t3rl process holds the run dir's lock is shown as `interrupted` (its
t3rl process died; `t3rl run --run-dir DIR` resumes it); a sweep point its sweep records as running
while the sweep's launcher is gone is `interrupted (launcher gone)` (launch.run.sweep_liveness), and
`t3rl runs show <sweep dir>` lists the sweep's points so. There each point that succeeded is also
checked for stale stages (launch.run.point_stale: its config composed, the only import beyond them).
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from launch.cli import completion
from launch.cli.help_format import GROUP_OPTIONS_READ, group_option_unread
from launch.cli.results_compare import (
    DEFAULT_METRIC,
    MIXED_FLAG,
    MIXED_HELP,
    compare_results,
    differing,
    hidden_note,
    metric_value,
    read_summary,
    reference_identity,
    result_lines,
    shown_count,
)
from launch.cli.runs_configs import ListingCache
from launch.cli.runs_filter import RUN_STATUSES, BadFilter, RunFilter, RunStatus, check_metric
from launch.files import is_locked
from launch.output import console as command_console
from launch.output.plain import PlainConsole
from launch.output.table import TextTable
from launch.run.output_digest import FileHashes, output_damage
from launch.run.record_files import (
    EVAL_RECORD,
    RunDirError,
    mapping_of_mappings,
    not_a_run_dir,
    read_json,
    read_sweep,
    read_yaml,
    stage_record,
)
from t3rl_core.counts import counted

# Run dirs sit at <runs>/<name>/<timestamp> and, for sweeps, <runs>/<name>/<sweep>/pNN; a standalone
# `t3rl eval` writes <runs>/eval-<engine>-<time>.
RUN_DIR_PATTERNS = ("*/config.yaml", "*/*/config.yaml", "*/*/*/config.yaml")
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
    # How a finished stage's outputs differ from their recorded digests (its status is then `damaged`).
    damage: str | None = None


@dataclass(frozen=True)
class RunView:
    """What `t3rl runs` shows of one run dir."""

    path: Path
    manifest: dict[str, Any]
    stages: tuple[StageView, ...]
    # A sweep point's status in its sweep's record when that record is stale (see sweep_liveness).
    sweep_status: str | None = None
    # The last pipeline's own record (state.json `pipeline`), its `running` read as interrupted when
    # no t3rl holds the dir: how a run stopped between stages, where no stage's record says it.
    pipeline: dict[str, Any] | None = None
    # Its config.yaml as read for its stages (None: a `t3rl eval` record, whose stage is its own).
    config: dict[str, Any] | None = None

    @cached_property
    def summaries(self) -> list[tuple[str, dict[str, Any]]]:
        """(eval stage, its summary.json) for each stage that wrote a readable one, read once: a listing
        reads them for the metric's check, each stage's reference, and the row (was: four times each)."""
        found = []
        for stage in self.stages:
            summary, _ = read_summary(summary_file(self, stage.name))
            if summary is not None:
                found.append((stage.name, summary))
        return found

    @property
    def status(self) -> str:
        if self.sweep_status is not None:
            return self.sweep_status
        statuses = [s.status for s in self.stages]
        ended = (self.pipeline or {}).get("status")
        if "running" in statuses or ended == "running":
            return "running"
        if ended in ("interrupted", "failed", "stopped"):
            return str(ended)
        for status in ("interrupted", "failed", "stopped", "damaged"):
            if status in statuses:
                return status
        if statuses and all(s in ("succeeded", "skipped") for s in statuses):
            return "succeeded"
        return "planned"

    @property
    def damage(self) -> str | None:
        """`stage S: <how its outputs differ>` for the first damaged stage, if any."""
        return next((f"stage {s.name}: {s.damage}" for s in self.stages if s.damage is not None), None)


def load_run(path: Path, listing: ListingCache | None = None) -> RunView:
    """A run dir's stages in config order (stages never started are `planned`); a `t3rl eval` record is
    one stage, `eval`. A listing hands in what it read of the run dirs before (`listing`)."""
    manifest_file = path / "manifest.json"
    manifest = read_json(manifest_file, dict) if manifest_file.exists() else {}
    if manifest.get("record") == EVAL_RECORD:
        return RunView(path, manifest, (_eval_stage(path),))
    config_file = path / "config.yaml"
    config = listing.read(config_file) if listing is not None else read_yaml(config_file, dict)
    planned = mapping_of_mappings(config_file, config, "stages")
    state_file = path / "state.json"
    records: dict[str, dict[str, Any]] = {}
    pipeline: dict[str, Any] | None = None
    state: dict[str, Any] = {}
    if state_file.exists():
        state = read_json(state_file, dict)
        records = mapping_of_mappings(state_file, state, "stages")
        pipeline = dict(state["pipeline"]) if isinstance(state.get("pipeline"), dict) else None
        for name, record in records.items():
            stage_record(state_file, name, record)
    active = is_locked(path / ".lock")
    names = list(planned) + [n for n in records if n not in planned]
    hashes = FileHashes()
    if records:
        hashes = (
            listing.file_hashes(path) if listing is not None else FileHashes.load(path / "file_hashes.json")
        )
    stages = []
    for name in names:
        record = records.get(name, {})
        status = record.get("status", "planned")  # stage_record refused any other than t3rl writes
        damage = None
        if status == "running" and not active:
            status = "interrupted"
        elif status in ("succeeded", "skipped"):
            damage = output_damage(path, record.get("outputs") or {}, state.get("run_dir"), hashes)
            status = status if damage is None else "damaged"
        stages.append(StageView(name, status, record, damage))
    if pipeline is not None and pipeline.get("status") == "running" and not active:
        pipeline["status"] = "interrupted"
    if listing is not None:
        listing.keep_hashes(path, hashes)
    return RunView(path, manifest, tuple(stages), _gone_sweep_point(path), pipeline, config)


def why_no_result(run_dir: Path, stage: str) -> str:
    """Why `run_dir` has no summary of eval stage `stage`, as its record says: the stage is not in its
    config, never ran, is running, or ended without one (failed or stopped, with the stage's message),
    and what makes one."""
    try:
        run = load_run(run_dir)
    except (OSError, ValueError, RunDirError) as error:
        return f"record cannot be read ({error})"
    view = next((view for view in run.stages if view.name == stage), None)
    if view is None:
        return f"config has no stage {stage}"
    resume = (
        f"`t3rl eval --resume --out {run_dir}`, with the eval's other arguments, runs it"
        if run.manifest.get("record") == EVAL_RECORD
        else f"`t3rl run --run-dir {run_dir}` runs it"
    )
    if view.status == "planned":
        return f"stage {stage} never ran (planned: a stage before it failed or the run stopped); {resume}"
    if view.status == "running":
        return f"stage {stage} is running now: compare once it ends"
    message = str(view.record.get("message") or "").strip()
    ended = f"stage {stage} {view.status}" + (f": {message}" if message else "")
    if view.status in ("succeeded", "skipped"):
        return f"{ended}, but wrote no summary.json (removed since?); {resume} again"
    return f"{ended}, before it wrote a summary; {resume} again"


def _eval_stage(path: Path) -> StageView:
    """A `t3rl eval` record as one stage: its summary says how it ended; without one, it is running
    while its eval holds the lock, else it was interrupted."""
    summary_file = path / "summary.json"
    summary, damage = read_summary(summary_file)
    if damage:
        summary = {"complete": False, "reason": damage}
    if summary is None:
        status = "running" if is_locked(path / ".lock") else "interrupted"
        return StageView(EVAL_RECORD, status, {})
    complete = summary.get("complete") is True
    record = {"message": "" if complete else str(summary.get("reason") or "incomplete")}
    ended = "succeeded" if complete else "stopped" if summary.get("stopped") is True else "failed"
    return StageView(EVAL_RECORD, ended, record)


def _gone_sweep_point(path: Path) -> str | None:
    """LAUNCHER_GONE for a sweep point its sweep records as running or waiting with no launcher left."""
    # lazy: the sweep modules, only for a sweep dir
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
    # Ties by path, the later timestamp first: runs copied or restored with their times (cp -a, rsync
    # -a, a backup) share an mtime, and a set's order changed the listing between two identical calls.
    return sorted(found, key=lambda p: ((p / "config.yaml").stat().st_mtime, str(p)), reverse=True)


def summary_file(view: RunView, stage: str) -> Path:
    """Where an eval stage's summary.json is (a `t3rl eval` record keeps it at its top)."""
    if view.manifest.get("record") == EVAL_RECORD:
        return view.path / "summary.json"
    return view.path / "stages" / stage / "summary.json"


def default_runs_dir() -> Path:
    """conf/paths/default.yaml's default: $T3RL_RUNS_DIR, else ./runs."""
    return Path(os.environ.get("T3RL_RUNS_DIR", "runs"))


def _metric_option(help: str) -> Any:
    return typer.Option("--metric", metavar="KEY", help=help, autocompletion=completion.metrics)


def register(app: typer.Typer) -> None:
    runs_app = typer.Typer(
        help="List run directories and their stages' status.\n\n"
        "Newest first, one mark per stage, each eval stage's metric. A run whose finished stage's outputs "
        "no longer match their recorded digests is damaged, the first change named below the table.\n\n"
        "Examples:\n\n"
        "  t3rl runs --status failed --name 'stage1*'\n\n"
        "  t3rl runs --where reward.name=binary --metric overall.pass@1\n\n"
        "  t3rl runs --json --status succeeded           # for scripts (jq, pandas)\n\n"
        "  t3rl runs show runs/quickstart/20260101-120000\n\n"
        "  t3rl runs diff runs/a/20260101-120000 runs/b/20260101-130000",
        no_args_is_help=False,
    )
    app.add_typer(runs_app, name="runs")
    # Which of the group's options each command reads (the others are refused with it, not ignored).
    GROUP_OPTIONS_READ["runs"] = {"show": ("--runs-dir",), "diff": ()}

    @runs_app.callback(invoke_without_command=True)
    def runs(
        ctx: typer.Context,
        runs_dir: Annotated[
            Path | None,
            typer.Option(
                "--runs-dir", metavar="DIR", help="Where run dirs live (default: $T3RL_RUNS_DIR or ./runs)."
            ),
        ] = None,
        name: Annotated[
            str | None,
            typer.Option(
                "--name", metavar="GLOB", help="Only runs whose path matches this glob, e.g. 'stage1*'."
            ),
        ] = None,
        status: Annotated[
            RunStatus | None,
            typer.Option(
                "--status",
                metavar="STATUS",
                help=f"Only runs with this status ({', '.join(RUN_STATUSES)}).",
                autocompletion=completion.choices(RUN_STATUSES),
            ),
        ] = None,
        where: Annotated[
            list[str] | None,
            typer.Option(
                "--where",
                metavar="KEY=VALUE",
                help="Only runs whose config has KEY=VALUE, e.g. reward.name=binary (repeatable); also "
                "KEY!=VALUE, and KEY>N, KEY>=N, KEY<N, KEY<=N for numbers, quoted: --where 'seed>3'.",
            ),
        ] = None,
        metric: Annotated[
            str,
            _metric_option(
                "The eval summary key shown per eval stage, e.g. overall.pass@1 (a number of its "
                "summary.json)."
            ),
        ] = DEFAULT_METRIC,
        mixed_identity: Annotated[bool, typer.Option(MIXED_FLAG, help=MIXED_HELP)] = False,
        as_json: Annotated[
            bool,
            typer.Option(
                "--json",
                help="Print the runs as a JSON list instead (run, path, created, status, damage, each "
                "stage's status, each eval stage's metric, tasks and what differs from the other runs' "
                "benchmark).",
            ),
        ] = False,
    ) -> None:
        """Every run under the runs dir, newest first: one mark per stage, each eval stage's metric."""
        if ctx.invoked_subcommand is not None:
            for param in ctx.command.params:
                # By name: Typer vendors its own click, whose ParameterSource is not click's.
                source = ctx.get_parameter_source(param.name or "")
                given = getattr(source, "name", None) == "COMMANDLINE"
                unread = given and group_option_unread("runs", ctx.invoked_subcommand, param.opts[0])
                if unread:
                    raise typer.BadParameter(unread, param_hint=param.opts[0])
            return
        try:
            filters = RunFilter.parse(name, status, where or ())
        except BadFilter as error:
            raise typer.BadParameter(str(error), param_hint=error.argument) from None
        code = list_runs(
            runs_dir or default_runs_dir(),
            filters=filters,
            metric=metric,
            given=runs_dir is not None,
            mixed=mixed_identity,
            as_json=as_json,
        )
        raise typer.Exit(code)

    @runs_app.command("diff")
    def diff(
        a: Annotated[Path, typer.Argument(metavar="A", help="A run directory.", show_default=False)],
        b: Annotated[Path, typer.Argument(metavar="B", help="Another run directory.", show_default=False)],
        mixed_identity: Annotated[bool, typer.Option(MIXED_FLAG, help=MIXED_HELP)] = False,
        metric: Annotated[
            str, _metric_option("The eval summary key compared per eval stage, e.g. overall.pass@4.")
        ] = DEFAULT_METRIC,
    ) -> None:
        """How two runs' configs differ, key by key, with the file or override that set each side; then
        their eval results side by side, refused (exit 1) when the benchmarks they measured differ.

        Examples:

          t3rl runs diff runs/stage1_bfcl/20260101-120000 runs/stage1_bfcl/20260102-090000

          t3rl runs diff runs/a/20260101-120000 runs/b/20260101-130000 --metric overall.pass@4
        """
        from launch.cli.runs_diff import diff_runs  # lazy: the run step's modules, only for `t3rl runs diff`

        code = diff_runs(a, b)
        if code == 0:
            code = compare_results(
                a, b, Console(highlight=False), mixed=mixed_identity, why_missing=why_no_result, metric=metric
            )
        raise typer.Exit(code)

    @runs_app.command("show")
    def show(
        ctx: typer.Context,
        run_dir: Annotated[
            Path | None,
            typer.Argument(
                metavar="RUN_DIR",
                help="A run directory, or a sweep dir (default: the newest run under `t3rl runs "
                "--runs-dir DIR show`'s DIR, $T3RL_RUNS_DIR or ./runs).",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """The run's manifest (code, launcher host, the hardware its stages asked for, seeds), its attempts
        and each stage's record; for a sweep dir, each point's status, stage, job and metric.

        Examples:

          t3rl runs show runs/quickstart/20260101-120000

          t3rl runs show                                  # the newest run
        """
        if run_dir is None:
            # the group's --runs-dir (`t3rl runs --runs-dir DIR show`), which the newest was not read from
            given = ctx.parent.params.get("runs_dir") if ctx.parent is not None else None
            run_dir = _newest_run(given)
        raise typer.Exit(show_run(run_dir))


def eval_metrics(view: RunView, metric: str) -> list[tuple[str, float | None, int | None]]:
    """(eval stage, its summary's `metric`, its task count) for each eval stage that wrote a summary."""
    found = []
    for stage, summary in _summaries(view):
        found.append((stage, metric_value(summary, metric), shown_count(summary, metric)))
    return found


def _summaries(view: RunView) -> list[tuple[str, dict[str, Any]]]:
    """(eval stage, its summary.json) for each stage that wrote a readable one."""
    return view.summaries


def list_runs(
    runs_dir: Path,
    console: Console | PlainConsole | None = None,
    *,
    filters: RunFilter | None = None,
    metric: str = DEFAULT_METRIC,
    given: bool = True,
    mixed: bool = False,
    as_json: bool = False,
) -> int:
    """The table of runs; 1 when a run dir's record cannot be read (each named on stderr, the others
    listed); 2 when the runs dir `given` is not one, or a filter or the metric can match
    nothing (the default runs dir not made yet is no error: no run has started here). A result of
    another benchmark identity than the listing's is not shown beside the others unless `mixed`. With
    `as_json`, stdout is one JSON list (every message on stderr), for scripts."""
    console = console or command_console(highlight=False)
    errors = Console(stderr=True, highlight=False)
    filters = filters or RunFilter()
    dangling = _dangling(runs_dir)
    if dangling is not None:  # a --runs-dir typed is refused as every bad value of an option is (2)
        errors.print(f"[red]error:[/] {escape(dangling)}", soft_wrap=True)
        return 2 if given else 1
    if not runs_dir.is_dir() and (given or runs_dir.exists()):
        what = "no runs dir there: it is a file" if runs_dir.exists() else "no runs dir there"
        errors.print(f"[red]error:[/] --runs-dir {escape(str(runs_dir))}: {what}", soft_wrap=True)
        return 2
    if (runs_dir / "config.yaml").is_file() or (runs_dir / "sweep.json").is_file():
        errors.print(
            f"[red]error:[/] --runs-dir {escape(str(runs_dir))} is a run or sweep dir, not a dir of runs: "
            f"`t3rl runs show {escape(shlex.quote(str(runs_dir)))}` shows it",
            soft_wrap=True,
        )
        return 2
    runs: list[tuple[Path, RunView]] = []
    configs: dict[Path, dict[str, Any]] = {}
    unreadable: list[RunDirError] = []  # listed after the table; the others are listed all the same
    listing = ListingCache(runs_dir)
    for path in find_runs(runs_dir) if runs_dir.is_dir() else []:
        try:
            view = load_run(path, listing)
            # Read once: load_run read it for the stages (a thousand runs' configs were parsed twice).
            configs[path] = view.config if view.config is not None else listing.read(path / "config.yaml")
        except RunDirError as error:
            unreadable.append(error)
            continue
        runs.append((path, view))
    if runs_dir.is_dir():
        listing.save()
    rows = [
        (str(path.relative_to(runs_dir)), view)
        for path, view in runs
        if filters.keeps(str(path.relative_to(runs_dir)), view, configs[path])
    ]
    try:
        filters.check_keys(configs.values())
        check_metric(metric, (summary for _, view in rows for _, summary in _summaries(view)))
    except BadFilter as error:
        errors.print(f"[red]error:[/] {error.argument}: {escape(str(error))}", soft_wrap=True)
        return 2
    if not runs_dir.is_dir():
        if as_json:
            print("[]")
        (errors if as_json else console).print(_no_runs_dir(runs_dir), soft_wrap=True, markup=False)
        return 0
    # Aligned rows in a pipe or a log (launch.output.table): `t3rl runs | grep <run>` finds its whole row.
    table = TextTable(
        f"{counted(len(rows), 'run')} in {escape(str(runs_dir))}",
        ("run", "created", "status", "stages", metric),
    )
    # Each eval stage is ranked against the same stage of the other runs: one run's evals may measure
    # differently by design (the quickstart's reference policy and tiny model).
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for _, view in rows:
        for stage, summary in _summaries(view):
            by_stage.setdefault(stage, []).append(summary)
    references = {stage: reference_identity(summaries, metric) for stage, summaries in by_stage.items()}
    if as_json:
        print(
            json.dumps(
                [_as_json(runs_dir / rel, rel, view, metric, references) for rel, view in rows], indent=2
            )
        )
        for error in unreadable:
            errors.print(f"[red]not listed:[/] {escape(str(error))}", soft_wrap=True)
        return 1 if unreadable else 0
    hidden = 0
    for relative, view in rows:
        stages = "  ".join(f"{MARKS.get(s.status, '?')} {escape(s.name)}" for s in view.stages)
        created = str(view.manifest.get("created_at", ""))[:19].replace("T", " ")
        lines = []
        for (name, value, n), (_, summary) in zip(eval_metrics(view, metric), _summaries(view), strict=True):
            lines += result_lines(name, value, n, summary, references[name], mixed=mixed, metric=metric)
            hidden += value is not None and bool(differing(summary, references[name], metric))
        metrics = "\n".join(escape(line) for line in lines)
        table.add_row(escape(relative), created, _status(view.status), stages, metrics)
    console.print(table)
    listed = [(str(path.relative_to(runs_dir)), view, configs[path]) for path, view in runs]
    why_none = None if rows else filters.why_none(listed)
    if why_none:
        console.print(f"note: no run listed: {escape(why_none)}", soft_wrap=True)
    for relative, view in rows:
        if view.status == "damaged":
            console.print(
                f"{MARKS['damaged']} {escape(relative)}: {escape(view.damage or '')} "
                f"(`t3rl run --run-dir` reruns it)",
                soft_wrap=True,
            )
    note = hidden_note(0 if mixed else hidden)
    if note:
        console.print(escape(note), soft_wrap=True)
    console.print("marks: " + "  ".join(f"{mark} {name}" for name, mark in MARKS.items()), soft_wrap=True)
    for error in unreadable:
        errors.print(f"[red]not listed:[/] {escape(str(error))}", soft_wrap=True)
    return 1 if unreadable else 0


# The keys of each eval of `t3rl runs --json`, fixed: the metric's name is a value, never a key (keyed by
# it, `--metric tasks` or a summary's `stage` number wrote over the row's own keys), and each number says
# what measured it (`identity`: its scorer, data, selection, ...; null for a summary older than
# identities), so one metric name from two scorers is not read as one benchmark's.
JSON_EVAL_KEYS = ("stage", "metric", "value", "tasks", "identity", "other_benchmark")


def _as_json(
    path: Path, relative: str, view: RunView, metric: str, references: dict[str, Any]
) -> dict[str, Any]:
    """One run of `t3rl runs --json`: what its row shows, as values (a metric not measured is null)."""
    evals = []
    for (stage, value, tasks), (_, summary) in zip(eval_metrics(view, metric), _summaries(view), strict=True):
        other = list(differing(summary, references[stage], metric) or [])
        values = (stage, metric, value, tasks, summary.get("identity"), other)
        evals.append(dict(zip(JSON_EVAL_KEYS, values, strict=True)))
    return {
        "run": relative,
        "path": str(path.resolve()),
        "created": view.manifest.get("created_at"),
        "status": view.status,
        "damage": view.damage,
        "stages": {stage.name: stage.status for stage in view.stages},
        "evals": evals,
    }


def _attempt(manifest: dict[str, Any]) -> str | None:
    """`2, started <time>`: the run's last attempt and when it started, as manifest.json records them."""
    started = manifest.get("updated_at")
    if not started:
        return None
    number = manifest.get("attempt")
    return f"{number}, started {started}" if isinstance(number, int) else f"last started {started}"


def _newest_run(given: Path | None = None) -> Path:
    """The newest run dir under `given` or the default runs dir, named first (what `t3rl runs` lists at its
    top)."""
    runs_dir = given or default_runs_dir()
    found = find_runs(runs_dir) if runs_dir.is_dir() else []
    if not found:
        why = _no_runs_dir(runs_dir) if not runs_dir.is_dir() else f"no run dir under {runs_dir}"
        raise typer.BadParameter(f"no RUN_DIR given, and {why}", param_hint="RUN_DIR")
    Console(stderr=True, highlight=False).print(f"the newest run: {escape(str(found[0]))}", soft_wrap=True)
    return found[0]


def _dangling(runs_dir: Path) -> str | None:
    """Why the runs below `runs_dir` cannot be read when it (or a dir above it) is a symbolic link to
    nothing, else None: a scratch disk not mounted on this machine was 'no runs yet', read as runs lost."""
    link = next((p for p in (runs_dir, *runs_dir.parents) if p.is_symlink() and not p.exists()), None)
    if link is None:
        return None
    return (
        f"{link} is a symbolic link to {os.readlink(link)}, which does not exist here (a disk not mounted "
        "on this machine, or removed): the runs below it cannot be listed; mount it, or point --runs-dir "
        "at another directory"
    )


def _no_runs_dir(runs_dir: Path) -> str:
    """What `t3rl runs` says when its runs dir does not exist: no run has started here, or (typed in a
    subdirectory of the checkout) the runs are in the same dir above this one, which it names."""
    dangling = _dangling(runs_dir)
    if dangling is not None:
        return dangling
    try:
        parents = [] if runs_dir.is_absolute() else Path.cwd().parents
    except OSError:  # the current directory was deleted: nothing is above it
        parents = []
    above = next((dir for dir in parents if find_runs(dir / runs_dir)), None)
    if above is None:
        return f"no runs yet: {runs_dir} does not exist (`t3rl run …` makes it)"
    count = len(find_runs(above / runs_dir))
    return (
        f"no runs here: {runs_dir} does not exist in {Path.cwd()}; {above / runs_dir} holds {count} run(s): "
        f"t3rl runs --runs-dir {shlex.quote(str(above / runs_dir))} (or cd {shlex.quote(str(above))})"
    )


def show_run(path: Path, console: Console | PlainConsole | None = None) -> int:
    console = console or command_console(highlight=False)
    if not (path / "config.yaml").exists() and (path / "sweep.json").exists():
        return show_sweep(path, console)
    why = not_a_run_dir(path)
    if why is not None:
        Console(stderr=True).print(f"[red]error:[/] {escape(why)}", soft_wrap=True)
        return 1
    # What it reads of the run kept as a listing keeps it (a copied run's hashes): shown again, only stat'ed.
    kept = ListingCache(path.parent)
    view = load_run(path, kept)
    kept.save()
    manifest = view.manifest
    console.print(f"[bold]{escape(str(path.resolve()))}[/]: {_status(view.status)}", soft_wrap=True)
    if not (path / "manifest.json").exists():
        # What the run's code, host and seeds were is unknown; said, not left out without a word.
        console.print(
            "  manifest   none: no manifest.json here (a run of an older t3rl, or a copy without it), "
            "so its code, launcher host, hardware and seeds are unknown",
            soft_wrap=True,
        )
    git = _shaped(manifest, "git", dict)
    launcher = _shaped(manifest, "launcher", dict) or _shaped(manifest, "host", dict)
    for label, value in (
        ("run", manifest.get("run_id") or manifest.get("run")),
        ("created", manifest.get("created_at")),
        # updated_at is when the last attempt started (the manifest is written then), not its end
        ("attempt", _attempt(manifest)),
        ("git", f"{git.get('sha', '?')}{' (dirty)' if git.get('dirty') else ''}" if git else None),
        ("t3rl", manifest.get("t3rl_version")),
        ("launcher", launcher.get("hostname")),
        ("overrides", " ".join(map(str, _shaped(manifest, "overrides", list))) or None),
        ("executor", _topology(manifest).get("executor")),
        ("hardware", _hardware(manifest)),
        ("seeds", json.dumps(manifest.get("seeds")) if manifest.get("seeds") else None),
        ("ended", _pipeline_end(view.pipeline)),
    ):
        if value:
            console.print(f"  {label:<10} {escape(str(value))}", soft_wrap=True)
    history = _history(path)
    if len(history) > 1:
        console.print("  attempts (overrides given → in force):", soft_wrap=True)
        for entry in history:
            given = " ".join(map(str, _shaped(entry, "given", list))) or "(none)"
            console.print(f"    {entry.get('attempt')}  {entry.get('at')}  {escape(given)}", soft_wrap=True)
    table = TextTable(
        "stages", ("stage", "status", "GPUs", "attempts", "started", "finished", "job", "message")
    )
    planned = _shaped(_topology(manifest), "stages", dict)
    for stage in view.stages:
        record = stage.record
        job = " ".join(
            f"{k}={v}" for k, v in _shaped(record, "handle", dict).items() if k in ("ray_job", "slurm_job")
        )
        message = str(record.get("message") or "")
        if stage.damage is not None:
            message = f"{stage.damage} (`t3rl run --run-dir` reruns it)"
        table.add_row(
            escape(stage.name),
            _status(stage.status),
            str(_shaped(planned, stage.name, dict).get("gpus") or ""),
            str(record.get("attempts", "")),
            str(record.get("started_at") or ""),
            str(record.get("finished_at") or ""),
            escape(job),
            escape(message),
        )
    console.print(table)
    if manifest.get("record") == EVAL_RECORD:
        # An eval record has no stages/ dir (the line named a log that is not there), and one that ended
        # before its summary (killed outright: no resume line was printed then) is resumed by `t3rl eval`.
        console.print(f"records: {path / 'trajectories.jsonl'}", soft_wrap=True, markup=False)
        if view.status != "succeeded":
            console.print(
                f"resume it with: {_eval_resume_line(path, manifest)}", soft_wrap=True, markup=False
            )
        return 0
    console.print(f"logs: {path / 'stages' / '<stage>' / 'log.txt'}", soft_wrap=True, markup=False)
    return 0


def _eval_resume_line(path: Path, manifest: dict[str, Any]) -> str:
    """`t3rl eval OVERRIDES [--stage S] --out PATH --resume`, from what the record's manifest keeps (the
    options it does not keep are named: a resume refuses an eval of other settings, naming them)."""
    stage = _shaped(manifest, "eval", dict).get("stage")
    words = [*map(str, _shaped(manifest, "overrides", list)), *(["--stage", str(stage)] if stage else [])]
    line = shlex.join(["t3rl", "eval", *words, "--out", str(path), "--resume"])
    return f"{line} (with the --engine, --url or other options it was started with)"


def show_sweep(path: Path, console: Console | PlainConsole) -> int:
    """A sweep dir: each point's status as it is now (a dead launcher's `running` point is
    `interrupted (launcher gone)`; its own record's where sweep.json says otherwise, named below the
    table), stage, job, metric, standing against the best point (sweep.md's) and run dir."""
    from launch.run.point_record import own_point  # lazy: the sweep modules, only for a sweep dir

    # lazy: the config's composition and the pipeline's modules, only for a sweep dir
    from launch.run.point_stale import stale_points
    from launch.run.sweep import SweepSummary  # lazy: the sweep modules, only for a sweep dir
    from launch.run.sweep_compare import marks  # lazy: the sweep modules, only for a sweep dir

    # lazy: the sweep modules, only for a sweep dir
    from launch.run.sweep_liveness import LAUNCHER_GONE, launcher_alive, points_now

    data = read_sweep(path)
    summary = SweepSummary.load(path)
    # Each point as its own record has it (sweep.json indexes the points, their records are the truth);
    # ranked so too: a point whose record is damaged is not best, whatever sweep.json says.
    points, notes = [], []
    for point in points_now(path):
        own, note = own_point(point, summary.metric_name)
        points.append(own)
        notes += [note] if note else []
        if own["index"] in summary.points:
            summary.points[own["index"]].metric = own["metric"] if own["status"] == "succeeded" else None
    standing = marks(summary)  # by interval; another benchmark's points not ranked
    # Every point that succeeded is checked for stages a resume would run again: its number came from them.
    for index, stale in stale_points(points).items():
        mark = standing.get(index, "")
        standing[index] = f"{mark}; {stale.line}" if mark else stale.line
        if stale.runs_again:
            point = next(p for p in points if p["index"] == index)
            label = f"point {index} ({' '.join(point.get('varying') or [])})"
            best = "best, but " if mark.startswith("best") else ""
            # A search is not resumed as a whole (launch.run.sweep_runs): its trial alone is.
            rerun = path if summary.search is None else point["run_dir"]
            notes.append(f"{label}: {best}{stale.line}: `t3rl run --run-dir {rerun}` runs it again")
    launcher = "running" if launcher_alive(path) else "not running"
    console.print(
        f"[bold]{escape(str(path.resolve()))}[/]: sweep {escape(str(data.get('name')))}", soft_wrap=True
    )
    console.print(f"  launcher   {launcher}", soft_wrap=True)
    metric = str(data.get("metric") or "metric")
    table = TextTable(
        "points", ("#", "point", "status", "stage", "job", metric, "vs best (95 % interval)", "run dir")
    )
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
            escape(standing.get(point.get("index"), "")),
            escape(os.path.relpath(point["run_dir"], path) if point.get("run_dir") else ""),
        )
    console.print(table)
    for note in notes:
        console.print(escape(note), soft_wrap=True)
    if any(p["status"] == LAUNCHER_GONE for p in points):
        console.print(
            f"resume it with: t3rl run --run-dir {shlex.quote(str(path))}", soft_wrap=True, markup=False
        )
    return 0


def _shaped(record: dict[str, Any], key: str, kind: type) -> Any:
    """A record's entry (manifest, stage record) when it has the shape t3rl writes, else empty (shown as
    absent)."""
    value = record.get(key)
    return value if isinstance(value, kind) else kind()


def _topology(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the config asked of the cluster (older manifests call it `topology`); {} when absent."""
    return _shaped(manifest, "planned_topology", dict) or _shaped(manifest, "topology", dict)


def _hardware(manifest: dict[str, Any]) -> str | None:
    """The hardware the run's stages use: its layout when a stage needs GPUs, none when all run on
    the CPU (the config's `hardware` section is then unused, whatever it names)."""
    topology = _topology(manifest)
    stages = _shaped(topology, "stages", dict)
    if not stages:
        return None
    gpus = {name: stage.get("gpus") or 0 if isinstance(stage, dict) else 0 for name, stage in stages.items()}
    if not any(gpus.values()):
        return "none: every stage runs on the CPU"
    hw = _shaped(topology, "hardware", dict)
    layout = f"{hw.get('nodes', '?')} node(s) × {hw.get('gpus_per_node', '?')} {hw.get('gpu_type', 'GPU')}"
    return f"{hw.get('name', '?')} ({layout}); GPUs per stage in the table"


def _history(path: Path) -> list[dict[str, Any]]:
    file = path / "overrides.history.yaml"
    if not file.exists():
        return []
    try:
        data = read_yaml(file)
    except RunDirError:  # the attempts are a detail of `runs show`: shown when readable
        return []
    return [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _pipeline_end(pipeline: dict[str, Any] | None) -> str | None:
    """How the last pipeline ended when not as its stages say (stopped between stages, interrupted)."""
    if not pipeline or pipeline.get("status") in ("running", "succeeded"):
        return None
    if pipeline.get("status") == "interrupted":
        return "interrupted: the t3rl that ran it ended without recording its end (killed, or its host lost)"
    return f"{pipeline.get('status')} {pipeline.get('finished_at') or ''}: {pipeline.get('message') or ''}"


def _status(status: str) -> str:
    # `interrupted (launcher gone)` takes the mark of `interrupted`.
    return f"{MARKS.get(status, MARKS.get(status.split(' ')[0], '?'))} {status}"
