"""The steps every run takes: resolve the overrides, plan, write the run dir, execute, report."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import t3rl_core
from launch.checks.context import EVERY_STAGE, Selection
from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem, render_problems
from launch.config.schema import RunConfig, TrainStage
from launch.config.secrets import scrub_obj, scrub_text, scrub_texts, secret_values
from launch.files import host_local_locks, write_record_json
from launch.output.markup import escape
from launch.plan.build import PlanContext, build_plan
from launch.plan.context import this_interpreter
from launch.plan.slime_args import merge_hardware
from launch.plan.tracking import tracked
from launch.run.executors.base import make_executor
from launch.run.executors.dry import DryExecutor
from launch.run.exit_codes import EXIT_FAILED, EXIT_STOPPED
from launch.run.pipeline import refused_in_a_new_record, run_pipeline
from launch.run.reporter import RichReporter
from launch.run.rundir import collect_manifest, record_path
from launch.run.secret_fingerprints import FILE, fingerprints
from t3rl_core.yaml_text import safe_dump

if TYPE_CHECKING:
    from rich.console import Console

    from launch.checks.resolve import Resolved
    from launch.config.errors import Severity
    from launch.output.plain import PlainConsole
    from launch.plan.build import Plan
    from launch.run.pipeline import PipelineResult
    from launch.run.rundir import RunDir


def t3rl_root() -> Path:
    """The directory holding the t3rl_core package (the checkout whose git state manifests record)."""
    return Path(t3rl_core.__file__).resolve().parents[1]


def resolve_overrides(
    overrides: list[str],
    config_dirs: list[str],
    console: Console | PlainConsole,
    plan_in: Callable[[RunConfig], RunDir] | None = None,
    record_dir: Path | None = None,
    *,
    plans: bool = False,
    selection: Selection = EVERY_STAGE,
) -> Resolved:
    """The validated config of a run, plan or sweep point; a config with no stage is refused here (there
    would be nothing to run, and no run dir is made for it). With `plan_in` (the run dir the plan will
    be written to, not yet made), the checks build the plan there, and `plan_run` into that dir takes it.
    `record_dir`: the dir the command line names for the record (`Context.record_dir`); `plans`: a new
    record is a plan, under paths.plans_dir (`Context.plans`); `selection`: the stages the command runs
    (`--from`/`--only`), which the checks of this machine judge."""
    resolve_in = (lambda run: plan_context(plan_in(run))) if plan_in is not None else None
    named = str(record_dir) if record_dir is not None else None
    judged: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
    if record_dir is not None:
        from launch.run.point_added import judged_as_the_sweeps  # lazy: a resumed record only

        judged = judged_as_the_sweeps(record_dir, overrides)  # a sweep point's own names are not typed
    with judged:
        resolved = resolve(overrides, config_dirs, resolve_in, named, plans=plans, selection=selection)
    if not resolved.run.stages:
        raise ConfigError([no_stages_problem(config_dirs=config_dirs)])
    if resolved.warnings:
        render_problems(resolved.warnings, console)
    return resolved


def refuse_selection_of_a_new_record(resolved: Resolved, selection: Selection, plans: bool) -> None:
    """Raise what the pipeline's `decide` will refuse of `--from`/`--only` in a new record (a stage
    selected reads one no stage of it will have made), with its words, as a config error before the record
    is made: `t3rl run --only train` of a new run was refused by the pipeline, exit 1, as a run failed."""
    if selection == EVERY_STAGE:
        return
    from launch.checks.validate import trial_plan  # lazy: only for a selection given

    plan = resolved.plan or trial_plan(resolved.run)[0]
    if plan is None:  # the checks built it: not built here only when they refused it, and raised then
        return
    # The dir's name is not stamped yet; the runs beside it (its parent) are what the fix's resume reads.
    root = resolved.run.paths.plans_dir if plans else resolved.run.paths.runs_dir
    refused = refused_in_a_new_record(selection, plan, Path(root).resolve() / resolved.run.name / "<new>")
    if refused:
        raise ConfigError(refused)


def no_stages_problem(severity: Severity = "error", config_dirs: Sequence[str] = ()) -> Problem:
    """A config without stages: what an experiment brings, so the fix names one: the user's own when
    a config dir of theirs holds one (`t3rl run --config-dir mine` said +experiment=quickstart, and that
    `t3rl ls experiment`, without the config dir, lists them: theirs were not listed)."""
    own = sorted({f.stem for d in config_dirs for f in Path(d).expanduser().glob("experiment/*.yaml")})
    dirs = "".join(f" --config-dir {shlex.quote(d)}" for d in config_dirs)
    return Problem(
        "stages",
        "the config has no stages, so there is nothing to run (no experiment was chosen?)",
        "the primary config (conf/config.yaml) and the overrides given",
        f"choose an experiment: +experiment={own[0] if own else 'quickstart'} (`t3rl ls experiment{dirs}` "
        "lists them)",
        severity=severity,
    )


def plan_context(run_dir: RunDir) -> PlanContext:
    """Where a plan of `run_dir` runs from: this interpreter, this checkout, this environment."""
    return PlanContext(
        run_dir=run_dir.path,
        base_dir=Path.cwd(),
        t3rl_root=str(t3rl_root()),
        python=this_interpreter(),
        run_id=run_dir.id,
        environ=dict(os.environ),
    )


def plan_run(resolved: Resolved, run_dir: RunDir) -> Plan:
    """The plan of a resolved config in `run_dir`; ConfigErrors carry the file that set the key."""
    if resolved.plan is not None and resolved.plan.run_dir == run_dir.path:
        return resolved.plan  # the checks built it in this dir's context (resolve_overrides' plan_in)
    try:
        return build_plan(resolved.run, plan_context(run_dir))
    except ConfigError as error:
        source = resolved.provenance.source
        raise ConfigError([p.with_source(source_of(source, p.key)) for p in error.problems]) from None


def source_of(source: Any, key: str) -> str:
    """Where `key` (or the nearest enclosing key that some file or override set) was set; "" if none."""
    parts = key.split(".")
    while parts:
        found = source(".".join(parts))
        if found:
            return found
        parts.pop()
    return ""


def config_yaml(resolved: Resolved, masked: dict[str, Any] | None = None) -> str:
    """The resolved config as config.yaml holds it (secrets masked; `masked`: the config already
    scrubbed, which a caller that needs it twice scrubs once)."""
    return safe_dump(scrub_obj(resolved.config) if masked is None else masked, sort_keys=False)


def write_run_dir(
    run_dir: RunDir,
    resolved: Resolved,
    plan: Plan,
    config_dirs: list[str],
    *,
    record: str = "run",
    given: list[str] | None = None,
    attempt: bool = True,
) -> None:
    """config.yaml, overrides.yaml, manifest.json, plan.sh (secrets masked in what is for reading).

    `record` is "run" (a run about to execute: one more entry in its overrides history, with the
    overrides `given` on this command line, unless `attempt` is False: a run dir prepared here for a
    child launcher that records its own attempt) or "plan" (a `t3rl plan` output, never executed)."""
    run = resolved.run
    number = None
    if record == "run" and attempt:
        number = run_dir.append_history(resolved.overrides if given is None else given, resolved.overrides)
    env_data = getattr(run.env, "data", None)
    seeds = {"run": run.seed, "eval": run.eval.seed}
    if env_data is not None and hasattr(env_data, "seed"):
        seeds["data"] = env_data.seed
    previous = run_dir.read_manifest()
    manifest = collect_manifest(
        run_name=run.name,
        run_id=run_dir.id,
        record=record,
        attempt=number,
        t3rl_root=t3rl_root(),
        topology=planned_topology(resolved, plan),
        seeds=seeds,
        overrides=resolved.overrides,
        config_dirs=config_dirs,
        created_at=previous.get("created_at"),
    )
    sandbox = getattr(run.env, "sandbox", None)
    if sandbox is not None:  # the sandbox modules are imported only for envs that have one
        # lazy: the local sandbox (asyncio), only for an env that uses it
        from t3rl_core.sandbox.config import LocalSandboxConfig

        # lazy: the local sandbox (asyncio), only for an env that uses it
        from t3rl_core.sandbox.local import sandbox_manifest

        if isinstance(sandbox, LocalSandboxConfig):
            manifest["sandbox"] = sandbox_manifest(sandbox)
    # The manifest before config.yaml: a dir is a record once config.yaml is there (RunDir.exists), and by
    # then its manifest says whether it is a run or a plan, even when the writing stopped right after.
    run_dir.write_manifest(manifest)
    masked = scrub_obj(resolved.config)  # once: config.yaml and the fingerprints both need it
    run_dir.write_config(config_yaml(resolved, masked), resolved.overrides)
    # Which file or override set each key (what `t3rl runs diff` shows beside each difference).
    secrets = secret_values()  # once, not once per key
    origins = resolved.provenance.to_dict()
    # A few files and overrides set every key: each source is scrubbed once.
    sources = {source: scrub_text(source, secrets) for source in set(origins.values())}
    # A key may hold a credential as much as its source (a variable named with a token).
    keys = scrub_texts(list(origins), secrets)
    write_record_json(
        run_dir.path / PROVENANCE_FILE,
        {key: sources[source] for key, source in zip(keys, origins.values(), strict=True)},
    )
    run_dir.write_plan_script(scrub_text(plan.render_script()))
    write_secret_fingerprints(run_dir.path, resolved.config, masked)


def write_secret_fingerprints(
    path: Path, config: dict[str, Any], masked: dict[str, Any] | None = None
) -> None:
    """What `t3rl runs diff` compares where config.yaml shows `***` (launch.run.secret_fingerprints);
    `masked`: `config` already scrubbed."""
    write_record_json(path / FILE, fingerprints(config, scrub_obj(config) if masked is None else masked))


# Dotted key → the file or override that set it, in every run dir.
PROVENANCE_FILE = "provenance.json"


def planned_topology(resolved: Resolved, plan: Plan) -> dict[str, Any]:
    """What the config asks for (executor, hardware, GPUs and nodes per stage): not where t3rl ran."""
    run = resolved.run
    stages: dict[str, Any] = {}
    for stage in plan.stages:
        stages[stage.name] = {"kind": stage.kind, "gpus": stage.gpus, "nodes": stage.nodes}
        spec = run.stages.get(stage.name)
        if isinstance(spec, TrainStage):
            hw = merge_hardware(run.hardware, spec.hardware, f"stages.{stage.name}.hardware")
            stages[stage.name].update(
                tp=hw.tensor_parallel,
                pp=hw.pipeline_parallel,
                cp=hw.context_parallel,
                ep=hw.expert_parallel,
                colocate=hw.colocate,
            )
    return {"executor": run.executor.kind, "hardware": run.hardware.model_dump(mode="json"), "stages": stages}


def execute(
    plan: Plan,
    run_dir: RunDir,
    resolved: Resolved,
    from_stage: str | None,
    only: str | None,
    *,
    dry: bool,
    console: Console | PlainConsole,
    record: Callable[[], None] | None = None,
) -> PipelineResult:
    """Run (or, `dry`, plan) the pipeline; `record` writes the run's record once it may start."""
    executor = DryExecutor() if dry else make_executor(resolved.run.executor, out=sys.stdout)
    reporter = RichReporter(console, show_commands=dry or executor.dry)
    if executor.dry:
        return run_pipeline(
            plan, run_dir, executor, from_stage=from_stage, only=only, reporter=reporter, record=record
        )

    mount = host_local_locks(run_dir.path)
    if mount is not None:
        console.print(
            f"warning: {run_dir.path} is on an NFS mount ({mount}) whose file locks are this host's alone "
            "(nolock or local_lock): a t3rl on another host would not be refused this run dir; run it "
            "from one host at a time",
            soft_wrap=True,
            markup=False,
        )
    with tracked(resolved.run, run_dir.path, resolved.config, reporter, run_dir.id) as tracking:

        def record_then_track() -> None:
            # The tracker opens once this attempt's manifest is written: its config holds that manifest.
            if record is not None:
                record()
            tracking.open()

        return run_pipeline(
            plan,
            run_dir,
            executor,
            from_stage=from_stage,
            only=only,
            reporter=tracking,
            record=record_then_track,
        )


def report_result(
    result: PipelineResult, plan: Plan, run_dir: RunDir, console: Console | PlainConsole, *, dry: bool
) -> int:
    # Paths and commands are escaped: `[…]` in a dir name or an override is text, not rich markup.
    where = f"[bold]{escape(str(run_dir.path))}[/]"
    if result.status == "planned":
        console.print(
            f"planned: {where} (every command: {escape(str(run_dir.path / 'plan.sh'))})", soft_wrap=True
        )
        return 0
    if result.status == "succeeded":
        console.print(f"[green]done[/]: {where}", soft_wrap=True)
        return 0
    name = result.failed_stage
    outcome = result.results.get(name) if name else None
    console.print(
        f"[red]stage {name} {result.status}[/]: {escape(outcome.message) if outcome else ''}", soft_wrap=True
    )
    console.print(f"resume with: t3rl run --run-dir {escape(shlex.quote(str(run_dir.path)))}", soft_wrap=True)
    return EXIT_STOPPED if result.status == "stopped" else EXIT_FAILED


def new_sweep_dir(resolved: Resolved, stamp: str, *, plan: bool = False) -> Path:
    """`<runs_dir>/<name>/sweep-<stamp>`; under plans_dir for a sweep that is only planned."""
    paths = resolved.run.paths
    runs = Path(paths.plans_dir if plan else paths.runs_dir).resolve()
    first = path = record_path(runs, resolved.run.name, f"sweep-{stamp}")
    n = 0
    while path.exists():
        n += 1
        path = first.with_name(f"{first.name}-{n}")  # as fresh_dir suffixes a name taken
    return path
