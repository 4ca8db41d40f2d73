"""One run: a new run dir, or an existing one resumed with its own overrides; then what comes next."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launch.checks.context import Selection
from launch.checks.resolve import resolve
from launch.checks.rules.local_dirs import read_only_mount, unwritable
from launch.config.errors import ConfigError
from launch.config.pydantic_plugins import without_plugins
from launch.config.secrets import replayable
from launch.output import console as command_console
from launch.output.markup import escape
from launch.output.table import TextTable
from launch.plan.build import PlanContext, build_plan
from launch.plan.context import this_interpreter
from launch.run.config_diff import config_changes
from launch.run.exit_codes import RESUME_WITH
from launch.run.pipeline import PipelineError, preview, refuse_in_use
from launch.run.published_view import show_published
from launch.run.record_files import read_yaml, run_dir_around, run_dir_hint
from launch.run.reporter import RichReporter
from launch.run.rundir import RunDir, RunDirError, code_state, older_code, record_path, stamp_now, started_in
from launch.run.steps import (
    config_yaml,
    execute,
    plan_run,
    refuse_selection_of_a_new_record,
    report_result,
    resolve_overrides,
    source_of,
    t3rl_root,
    write_run_dir,
)
from t3rl_core.installed import package_versions
from t3rl_core.yaml_text import safe_load

if TYPE_CHECKING:
    from rich.console import Console

    from launch.checks.resolve import Resolved
    from launch.config.schema import RunConfig
    from launch.output.plain import PlainConsole


def run_single(
    overrides: list[str],
    config_dirs: list[str],
    run_dir_path: Path | None,
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console | PlainConsole,
    out: Path | None = None,
) -> int:
    """`t3rl run` (a new run dir, or `run_dir_path` resumed with the overrides it ran with plus the
    `overrides` given now) or, with `dry`, `t3rl plan` (into a plan dir; for an existing run dir, a
    read-only preview that writes nothing)."""
    existing = RunDir(run_dir_path) if run_dir_path is not None else None
    given = list(overrides)
    if dry and existing is not None and out is not None:
        raise PipelineError(
            "--run-dir previews a run without writing anything; --out writes a new plan: use one"
        )
    if run_dir_path is not None and existing is not None and not existing.exists():
        otherwise = (
            ""  # a path inside a run dir: the run dir is what was meant, not a new plan or run
            if run_dir_around(run_dir_path) is not None
            else f"; `t3rl plan --out {existing.path} …` writes a new plan there"
            if dry
            else "; `t3rl run OVERRIDES…` starts a new run (its dir goes under paths.runs_dir)"
        )
        raise PipelineError(
            f"{existing.path} is not a run dir (no config.yaml: {run_dir_hint(run_dir_path)}), so there "
            f"is nothing to {'preview' if dry else 'resume'}{otherwise}"
        )
    unwritable_run = unwritable_record(existing.path, given) if existing is not None else None
    if unwritable_run is not None and not dry:
        raise PipelineError(unwritable_run)  # before the lock or any record is written
    if existing is not None and not dry:
        refuse_in_use(existing)
    if existing is not None:
        overrides, config_dirs = _resumed(existing, given, config_dirs, console, dry=dry)
    stamp = stamp_now()
    # A new plan is checked in the dir it will be written to (named now, made once the config passes),
    # so its plan is built once; it is built again only if another plan took that dir meanwhile.
    plan_in = (lambda run: _plan_dir_named(run, out, stamp)) if dry and existing is None else None
    try:
        with without_plugins():
            resolved = resolve_overrides(
                overrides,
                config_dirs,
                console,
                plan_in,
                existing.path if existing is not None else out,
                plans=dry,
                selection=Selection(from_stage, only),
            )
    except ConfigError:
        if existing is not None:
            _blame_the_record(existing, given, config_dirs, dry=dry)
        raise
    dry = dry or resolved.run.executor.kind == "dry"
    if dry and existing is not None:
        if unwritable_run is not None:
            console.print(
                f"note: `t3rl run --run-dir` would refuse it: {unwritable_run}", soft_wrap=True, markup=False
            )
        return _preview(existing, resolved, from_stage, only, given, config_dirs, console)
    if not dry and existing is not None and existing.is_plan():
        raise PipelineError(
            f"{existing.path} is a plan written by `t3rl plan`, not a run; start the run with "
            f"`{_new_run_command(overrides, config_dirs)}` (its record goes under paths.runs_dir)"
        )
    if existing is not None:
        _show_config_changes(existing, resolved, console, resumed=True)
        _show_code_change(existing, console)
        _show_environ_change(existing, console)
    elif not dry:
        from launch.run.unfinished import unfinished_same_run  # lazy: a new run only, not plan or validate

        runs_dir = Path(resolved.run.paths.runs_dir).resolve()
        repeated = unfinished_same_run(runs_dir, resolved.run.name, overrides, config_dirs)
        if repeated is not None:
            console.print(escape(repeated), soft_wrap=True)
    if existing is None:  # after the note above: a stopped run's resume is what was likely meant
        refuse_selection_of_a_new_record(resolved, Selection(from_stage, only), dry)
    run_dir, fresh = (
        _plan_dir(resolved, out, stamp)
        if dry
        else (existing, False)
        if existing
        else (_new_run_dir(resolved), True)
    )
    run_dir.path.mkdir(parents=True, exist_ok=True)
    try:
        with without_plugins():
            plan = plan_run(resolved, run_dir)
    except BaseException:
        if fresh:
            run_dir.remove_if_empty()
        raise

    whole = False
    selected = only or from_stage
    before = _execution_of(run_dir, selected)

    def record() -> None:
        nonlocal whole
        write_run_dir(run_dir, resolved, plan, config_dirs, record="plan" if dry else "run", given=given)
        whole = not dry  # a plan is whole once its stages' files are written too, when execute returns

    try:
        result = execute(plan, run_dir, resolved, from_stage, only, dry=dry, console=console, record=record)
    except BaseException as error:
        if fresh and not whole:
            # Refused before its record was written (pre-flight, --from, the lock), or stopped while it
            # was being written: leave nothing, rather than half a record that reads as a run or a plan.
            run_dir.discard()
        if not dry and run_dir.exists():
            # The selection goes on with the resume until its stage started: stopped before (a full disk
            # as the record was written, Ctrl-C at pre-flight), a plain resume left it cached.
            started = selected is None or _execution_of(run_dir, selected) not in (before, None)
            flag = [] if started else ["--only" if only else "--from", str(selected)]
            line = shlex.join(["t3rl", "run", "--run-dir", str(run_dir.path), *flag])
            error.add_note(RESUME_WITH + line)
            if isinstance(error, KeyboardInterrupt):
                console.print(escape(RESUME_WITH + line), soft_wrap=True)
                raise RecordKept from error  # what `t3rl run` says it stopped: a record, with its stages
        raise
    code = report_result(result, plan, run_dir, console, dry=dry)
    if dry:
        show_published(resolved.run, console)
        sandbox = getattr(resolved.run.env, "sandbox", None)
        if getattr(sandbox, "name", None) == "local":  # the sandbox module loads only for such envs
            # lazy: the local sandbox (asyncio), only for an env that uses it
            from t3rl_core.sandbox.local import memory_cap_line

            console.print(memory_cap_line(sandbox), soft_wrap=True)
        dirs = "".join(f" --config-dir {shlex.quote(d)}" for d in config_dirs)
        replay = [replayable(o) for o in overrides]
        console.print(f"run it:  t3rl run {escape(shlex.join(replay) + dirs)}", soft_wrap=True)
    if code == 0 and not dry and resolved.run.next_experiment:
        upcoming = resolved.run.next_experiment
        next_overrides = continuing_overrides(resolved, run_dir.path, upcoming, config_dirs)
        _show_next(next_overrides, config_dirs, console)
    return code


class RecordKept(KeyboardInterrupt):
    """A run stopped (Ctrl-C, SIGTERM) once its record was whole: its stages are recorded as stopped and
    it resumes. Stopped before (while composing, at pre-flight, while its record was written), nothing of
    it is kept, which `t3rl run` says instead."""


# What a resume writes into the record itself, by the record's kind.
_RESUME_WRITES = {
    "run dir": "its lock, state and stage outputs",
    "sweep dir": "its lock, sweep.json and its points' run dirs",
}


def _execution_of(run_dir: RunDir, stage: str | None) -> str | None:
    """The run id of the last execution of `stage` its run dir records (None: none, or unreadable)."""
    if stage is None:
        return None
    try:
        record = run_dir.load_state().stages.get(stage)
    except (RunDirError, OSError):
        return None
    return record.run_id if record is not None else None


def unwritable_record(record: Path, given: list[str], what: str = "run dir") -> str | None:
    """Why a resume cannot write `record` (a run or sweep dir: another user's, on a read-only mount), and
    its fix, or None. A resume writes into the record itself, so another paths.runs_dir is no fix: a
    copy where this user can write is (a sweep's points are found below its dir as it is now), resumed
    there."""
    path = Path(os.path.abspath(record.expanduser()))
    why = unwritable(path, probe=False)  # a resume refused later leaves the record's mtime as it was
    if why is None:
        return None
    copy = _copy_destination(path)
    again = shlex.join(["t3rl", "run", "--run-dir", str(copy), *(replayable(o) for o in given)])
    return (
        f"{why}: a resume writes into the {what} itself ({_RESUME_WRITES[what]}), not under "
        f"paths.runs_dir; copy it where you can write and resume the copy: mkdir -p "
        f"{shlex.quote(str(copy.parent))} && cp -a {shlex.quote(str(path))} {shlex.quote(str(copy))} && "
        f"{again} ({_or_else(path)})"
    )


def _or_else(path: Path) -> str:
    """The other fix of a record a resume cannot write: its mount's, or its modes'."""
    mount = read_only_mount(path)
    return f"or remount {mount} read-write" if mount is not None else f"or make {path} writable by this user"


def _copy_destination(run: Path) -> Path:
    """A new dir this user can write, named as the run (`<experiment>/<time>`): under ./runs, else
    ~/t3rl-runs, else the temp dir."""
    import tempfile  # lazy: only for a run dir that cannot be written

    for base in (Path.cwd() / "runs", Path.home() / "t3rl-runs", Path(tempfile.gettempdir()) / "t3rl-runs"):
        copy = base / run.parent.name / run.name
        if copy != run and not copy.exists() and unwritable(copy, probe=False) is None:
            return copy
    return Path.home() / "t3rl-runs" / run.parent.name / run.name


def _resumed(
    existing: RunDir, given: list[str], config_dirs: list[str], console: Console | PlainConsole, *, dry: bool
) -> tuple[list[str], list[str]]:
    """The overrides and config dirs of a resumed run: the stored ones, with `given` merged in."""
    # lazy: only when a run dir is resumed
    from launch.run.override_merge import merge_overrides, refuse_masked

    manifest = existing.read_manifest()
    if manifest.get("record") == "eval":  # launch.cli.eval_command.EVAL_RECORD
        raise PipelineError(
            f"{existing.path} is the record of a `t3rl eval`, not a run: there are no stages to resume; "
            "run the eval again with `t3rl eval …`, or start a run with `t3rl run OVERRIDES…`"
        )
    recorded_dirs = manifest.get("config_dirs", [])
    if not isinstance(recorded_dirs, list) or not all(isinstance(d, str) for d in recorded_dirs):
        raise RunDirError(
            f"{existing.path / 'manifest.json'}: `config_dirs` is not a list of directories (changed "
            "outside t3rl): restore it, or give the config dirs with --config-dir"
        )
    stored = existing.read_overrides()
    overrides = merge_overrides(stored, given)
    command = f"t3rl {'plan' if dry else 'run'} --run-dir {existing.path}"
    refuse_masked(overrides, existing.path, command)
    config_dirs = config_dirs or list(recorded_dirs)
    in_recorded_working_dir(existing, manifest, console)
    verb = "previewing a resume of" if dry else "resuming"
    console.print(
        f"{verb} [bold]{escape(str(existing.path))}[/] with its overrides: "
        f"{escape(' '.join(stored)) or '(none)'}",
        soft_wrap=True,
    )
    if overrides != stored:
        console.print(f"  with {' '.join(given)}: {' '.join(overrides)}", soft_wrap=True, markup=False)
    return overrides, config_dirs


def in_recorded_working_dir(
    existing: RunDir, manifest: Mapping[str, Any], console: Console | PlainConsole
) -> None:
    """Resume where the run was started: its config's relative paths (`models/…`, the conversion cache
    under `checkpoints/`) resolved against the working directory, so a resume typed in another one said
    "config: unchanged" and planned a conversion into another cache and a model that is not there."""
    where = started_in(manifest)
    if where.gone:
        console.print(
            f"note: {existing.path} was started in {where.recorded}, which is gone: its relative paths "
            f"({existing.path / 'config.yaml'}) now resolve in {os.getcwd()}",
            soft_wrap=True,
            markup=False,
        )
        return
    if where.resolve_in is None or os.path.realpath(where.resolve_in) == os.path.realpath("."):
        return
    os.chdir(where.resolve_in)
    console.print(
        f"in {where.resolve_in}, where {existing.path.name} was started (its relative paths resolve there)",
        soft_wrap=True,
        markup=False,
    )


def _blame_the_record(existing: RunDir, given: list[str], config_dirs: list[str], *, dry: bool) -> None:
    """A resume whose recorded overrides no longer compose (a t3rl of another version wrote them, a key
    was renamed since): say where they come from and how to change them without editing the record. A
    record of a t3rl from before config dirs were recorded names none: an experiment of the user's
    own config dir was then 'unknown', and the way to give the dir again was not said."""
    manifest = existing.read_manifest()
    recorded = manifest.get("t3rl_version")
    ours = package_versions().get("t3rl")
    version = f" by t3rl {recorded}; this is t3rl {ours}" if recorded and recorded != ours else ""
    command = f"t3rl {'plan' if dry else 'run'} --run-dir {shlex.quote(str(existing.path))}"
    # No manifest.json at all (deleted, a copy without it) is no record of an older t3rl: said as it is.
    why = (
        "names no config dirs (written before they were recorded)"
        if (existing.path / "manifest.json").exists()
        else "is missing (deleted, or a copy without it): it named the config dirs the run was composed with"
    )
    dirs = (
        ""
        if config_dirs or "config_dirs" in manifest
        else f"; its manifest.json {why}: if it ran with one, give it again with `{command} --config-dir DIR`"
    )
    command_console(stderr=True, highlight=False).print(
        f"note: the overrides not given on this command line are those recorded in "
        f"{existing.path / 'overrides.yaml'}{version}. Change one with `{command} KEY=VALUE`, drop one "
        f"with `{command} '~KEY'`{dirs}",
        soft_wrap=True,
        markup=False,
    )


def _preview(
    existing: RunDir,
    resolved: Resolved,
    from_stage: str | None,
    only: str | None,
    given: list[str],
    config_dirs: list[str],
    console: Console | PlainConsole,
) -> int:
    """`t3rl plan --run-dir R`: what `t3rl run --run-dir R` would change and run; R is not touched. For a
    plan's record R the line to run is a new run of its overrides: `t3rl run --run-dir` refuses a plan."""
    plan = plan_run(resolved, existing)
    _show_config_changes(existing, resolved, console, resumed=False)
    _show_code_change(existing, console)
    _show_environ_change(existing, console)
    preview(
        plan, existing, from_stage=from_stage, only=only, reporter=RichReporter(console, show_commands=True)
    )
    console.print(
        f"nothing was written: the record of {existing.path} is unchanged", soft_wrap=True, markup=False
    )
    if existing.is_plan():
        command = _new_run_command(resolved.overrides, config_dirs)
    else:
        command = shlex.join(["t3rl", "run", "--run-dir", str(existing.path), *given])
    console.print(f"run it:  {command}", soft_wrap=True, markup=False)
    return 0


def _new_run_command(overrides: list[str], config_dirs: list[str]) -> str:
    """`t3rl run` of these overrides and config dirs, as pasted (a literal credential by its reference)."""
    dirs = [arg for directory in config_dirs for arg in ("--config-dir", directory)]
    return shlex.join(["t3rl", "run", *(replayable(o) for o in overrides), *dirs])


def _show_config_changes(
    existing: RunDir, resolved: Resolved, console: Console | PlainConsole, *, resumed: bool
) -> None:
    """The config's changes against the run's record, each with the file or override that sets it now:
    a config file edited since the last attempt (not only an override given now) is named before any
    stage reruns because of it."""
    recorded = existing.path / "config.yaml"
    try:
        changes = config_changes(
            read_yaml(recorded),
            safe_load(config_yaml(resolved)),
            where=lambda key: source_of(resolved.provenance.source, key),
        )
    except RunDirError as err:  # damaged: a resume keeps it under superseded/, as any changed config
        changes = [
            f"{recorded} is corrupt ({err.reason}): a resume keeps it under superseded/ and records this one"
        ]
    if changes:
        kept = " (the run's previous config.yaml is kept under superseded/)" if resumed else ""
        console.print(f"config changes against the run's record ({len(changes)}){kept}:", soft_wrap=True)
        for line in changes:
            console.print(f"  {line}", soft_wrap=True, highlight=False, markup=False)
    elif not resumed:
        console.print("config: unchanged since the last run of this dir", soft_wrap=True)


def _show_code_change(existing: RunDir, console: Console | PlainConsole) -> None:
    """Stages whose outputs a resume keeps although t3rl's code changed since they ran (their command
    and inputs unchanged): named with both commits and the line that reruns them with this code. The
    manifest then records this attempt's code; each stage's record keeps the code it ran with."""
    try:
        state = existing.load_state()
    except RunDirError:
        return  # the run itself reports the damaged state file
    code = code_state(t3rl_root())
    older = older_code(state, code)
    if not older:
        return
    first = state.stages[older[0]].code or {}
    console.print(
        f"code changed since {', '.join(older)} ran (t3rl at {_commit(first)} → {_commit(code)}): their "
        f"outputs are kept while their command and inputs are unchanged; `t3rl run --run-dir "
        f"{shlex.quote(str(existing.path))} --from {older[0]}` runs them again with this code",
        soft_wrap=True,
        markup=False,
    )


def _show_environ_change(existing: RunDir, console: Console | PlainConsole) -> None:
    """Stages whose outputs a resume keeps although a variable of the shell that changes how a stage runs
    (`launch.run.inherited_env.INHERITED`: CUDA_VISIBLE_DEVICES, NCCL_*, the hub cache, ...) changed
    since they ran: no part of the run's identity, so nothing reruns for it; each change named, with the
    line that reruns them."""
    from launch.run.inherited_env import changed_since, inherited  # lazy: a resume or its preview only

    try:
        state = existing.load_state()
    except RunDirError:
        return  # the run itself reports the damaged state file
    now_ = inherited(os.environ)
    kept = {
        name: changed_since(record.environ, now_)
        for name, record in state.stages.items()
        if record.status in ("succeeded", "skipped") and record.environ is not None
    }
    older = [name for name, changes in kept.items() if changes]
    if not older:
        return
    changes = list(dict.fromkeys(change for name in older for change in kept[name]))
    console.print(
        f"environment changed since {', '.join(older)} ran ({'; '.join(changes)}): not part of the run's "
        f"identity, their outputs are kept; `t3rl run --run-dir {shlex.quote(str(existing.path))} --from "
        f"{older[0]}` runs them again with it",
        soft_wrap=True,
        markup=False,
    )


def _commit(code: Mapping[str, Any]) -> str:
    return f"{str(code.get('sha'))[:10]}{' with uncommitted changes' if code.get('dirty') else ''}"


def _plan_dir_named(run: RunConfig, out: Path | None, stamp: str) -> RunDir:
    """The dir `_plan_dir` makes or takes, before it does."""
    return RunDir(out.expanduser() if out is not None else record_path(_plans(run), run.name, stamp))


def _plans(run: RunConfig) -> Path:
    return Path(run.paths.plans_dir).resolve()


def _plan_dir(resolved: Resolved, out: Path | None, stamp: str) -> tuple[RunDir, bool]:
    """Where `t3rl plan` writes: `out`, else a new `<plans_dir>/<name>/<stamp>`; (dir, created now)."""
    if out is None:
        return RunDir.new(_plans(resolved.run), resolved.run.name, stamp), True
    target = RunDir(out.expanduser())
    if target.path.exists() and not target.path.is_dir():
        raise PipelineError(f"--out {out}: {target.path} is a file, not a directory for the plan")
    if target.exists() and not target.is_plan():
        raise PipelineError(
            f"{target.path} holds a run's record; a plan never writes over one "
            f"(`t3rl plan --run-dir {target.path}` previews what a run there would do)"
        )
    # After the record check: the probe makes and removes a directory there, which a run's dir never gets.
    why = unwritable(target.path)
    if why is not None:
        raise PipelineError(f"--out {out}: {why}; choose a directory you can write")
    names = sorted(p.name for p in target.path.iterdir()) if target.path.is_dir() else []
    others = [name for name in names if name != ".lock"]  # a refused plan's lock is no file of anyone's
    if others and not target.exists():
        # `--out .` or `--out ~`: the plan's files (config.yaml, runtime/, stages/) would land among them.
        shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
        raise PipelineError(
            f"--out {out}: {target.path} holds other files ({shown}); a plan goes into a new or empty dir, "
            "or over an earlier plan: choose another --out"
        )
    target.created = [p for p in target.path.parents if not p.exists()]
    return target, not target.path.exists()


def continuing_overrides(
    resolved: Resolved, run_dir: Path, experiment: str, config_dirs: list[str]
) -> list[str]:
    """The next experiment's overrides: this run's own (model, hardware, …) carried over, and its first
    train stage continuing from this run's last train stage when both train the same model."""
    carried = [o for o in resolved.overrides if o.lstrip("+~").partition("=")[0] != "experiment"]
    base = [f"+experiment={experiment}"]
    for candidate in (base + carried, base):
        try:
            upcoming = resolve(candidate, config_dirs).run
            break
        except ConfigError:
            continue
    else:
        return base
    ours = [name for name, stage in resolved.run.stages.items() if stage.kind == "train"]
    theirs = [name for name, stage in upcoming.stages.items() if stage.kind == "train"]
    if not ours or not theirs or upcoming.model.name != resolved.run.model.name:
        return candidate
    first = upcoming.stages[theirs[0]]
    if getattr(first, "init_from", None) is not None:
        return candidate
    continuing = [*candidate, f"stages.{theirs[0]}.init_from=run:{run_dir.resolve()}:{ours[-1]}"]
    try:
        resolve(continuing, config_dirs)
    except ConfigError:
        return candidate  # this run's checkpoint is not usable (e.g. removed): start from the base model
    return continuing


def _new_run_dir(resolved: Resolved) -> RunDir:
    return RunDir.new(Path(resolved.run.paths.runs_dir).resolve(), resolved.run.name)


def _show_next(overrides: list[str], config_dirs: list[str], console: Console | PlainConsole) -> None:
    """The plan of the follow-up experiment and the exact command that starts it."""
    resolved = resolve(overrides, config_dirs)
    experiment = resolved.run.name
    runs = Path(resolved.run.paths.runs_dir).resolve()
    ctx = PlanContext(
        run_dir=runs / experiment / "<timestamp>",
        base_dir=Path.cwd(),
        t3rl_root=str(t3rl_root()),
        python=this_interpreter(),
        run_id=f"{experiment}-next",
        environ=dict(os.environ),
    )
    plan = build_plan(resolved.run, ctx)
    # Aligned rows in a pipe or a log, as the run's own table: rich's table folded each stage's
    # summary over two or three lines there, so grep found half of it.
    table = TextTable(f"next: {escape(overrides[0])}", ("stage", "kind", "what", "GPUs"))
    for stage in plan.stages:
        table.add_row(escape(stage.name), escape(stage.kind), escape(stage.summary), str(stage.gpus or ""))
    console.print(table)
    dirs = [token for d in config_dirs for token in ("--config-dir", d)]
    command = shlex.join([*dirs, *(replayable(o) for o in overrides)])
    console.print(f"every command: t3rl plan {command}", soft_wrap=True, markup=False)
    console.print(f"next: t3rl run {command}", soft_wrap=True, highlight=False, markup=False)
