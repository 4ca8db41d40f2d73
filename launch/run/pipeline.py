"""Run a plan's stages in order with an executor, resumably.

Which stages run (`decide`), per stage in plan order:
- **cached**: it succeeded before with the same fingerprint (commands, env, files it reads) and the
  same upstream run ids (no stage it reads from ran again since), its complete-markers still exist, and
  every output it declares (`Stage.verify`, plus its outputs.json) still matches the digest recorded
  when it finished (`launch.run.output_digest`): a deleted summary, an emptied outputs.json or a data file
  with garbage in it makes the stage run again, with the damaged path named in the reason;
- **complete**: its output already exists and is complete (`Stage.complete_when`; the shared HF →
  torch_dist cache, an available model) — adopted without running;
- **finish**: its command exited 0 but t3rl was stopped before it recorded the stage (while it
  stopped what the command left or hashed its outputs): its outputs are checked now and the stage is
  recorded as succeeded, not run again (run again in place only if an output is missing);
- **resume**: it started before with the same command and inputs but did not finish (killed, failed,
  stopped): it runs again in place, so a train stage continues from its last checkpoint;
- **run**: anything else. If an older output of the stage exists (its command or an upstream stage
  changed), its directory is moved to `superseded/` first, so a stale checkpoint is never resumed.
A stage's upstream is the stages it reads from (`Stage.reads_from`: the earlier stages its `inputs`
name). A stage that runs gives its output a new run id, so the stages that read it, and those that
read them, see a changed upstream and run too; a later stage that reads none of them stays cached
(a damaged eval reruns that eval, not the evals after it; damaged data reruns every consumer). A stage
that ran because its command changed and wrote, by content, the very output it had keeps its output id,
and the stages after it are decided again (`_same_output`): what was made from that output stays.

`--from S` forces S to run and selects everything after it (the stages that read S, directly or not,
run; the others run only if they are stale themselves); `--only S` forces S alone. Stages outside the
selection are left as they are, but those a selected stage reads must have succeeded (or be
complete).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from launch.checks.context import Selection
from launch.config.errors import Problem, did_you_mean
from launch.files import LockHeld, exclusive_lock, is_locked, lock_holder, waiting_lock
from launch.plan.build import Plan
from launch.plan.stages import Stage, first_shortfall
from launch.run.executors.base import (
    Executor,
    StageContext,
    StageResult,
    executor_kind,
    exit_record,
    out_of_reach,
    started_by,
)
from launch.run.exit_codes import stop_reason
from launch.run.output_digest import FileHashes, digests, first_mismatch, manifest_disagreement
from launch.run.rundir import RunDir, RunDirError, RunState, StageRecord, now
from t3rl_core.records import Record

Action = Literal["run", "resume", "finish", "cached", "complete", "outside"]
# A stage's output id: a run id, `complete:<fingerprint>`, `pending:<name>`, or None (no usable output).
_Id = TypeVar("_Id", str, str | None)


UNRECORDED = "no record of it in state.json: its stage dir, left from before, goes to superseded/"


class Decision(Record):
    stage: str
    action: Action
    reason: str
    # Move the stage's old directory aside before running (its output is stale).
    supersede: bool = False
    # Identity of the stage's output for the stages after it, when the stage does not run.
    output_id: str | None = None

    @property
    def executes(self) -> bool:
        """It may run the stage's command ("finish" does when an output turns out missing)."""
        return self.action in ("run", "resume", "finish")


class PipelineError(Exception):
    """The pipeline cannot start (bad --from/--only, missing upstream outputs, run dir in use)."""


def decide(
    plan: Plan,
    state: RunState,
    *,
    from_stage: str | None = None,
    only: str | None = None,
    exists: Callable[[str], bool] = os.path.exists,
    hashes: FileHashes | None = None,
) -> list[Decision]:
    """What happens to each stage of `plan` given the saved `state` (no side effects but the file
    hashes it adds to `hashes`)."""
    names = plan.names()
    for flag, value in (("--from", from_stage), ("--only", only)):
        if value is not None and value not in names:
            guess = did_you_mean(value, names)
            meant = f"did you mean {flag} {guess}? " if guess else ""
            raise PipelineError(f"{flag} {value}: no such stage ({meant}stages: {', '.join(names)})")
    if from_stage and only:
        raise PipelineError("use either --from or --only, not both")
    selection = Selection(from_stage, only)
    selected = set(selection.of(names))  # the pre-flight's checks judge these alone
    unmade = selection.unmade(plan, exists) if not state.stages else None  # a new run or plan
    if unmade is not None:
        raise PipelineError("; ".join(_selected_in_a_new_record(plan.run_dir, selection.flag(), *unmade)))
    forced = {only or from_stage} - {None}

    first_selected = min(names.index(n) for n in selected)
    current: dict[str, str | None] = {}
    # Why an earlier stage's output cannot be read by the selection: damaged since it finished, made by
    # another command than the one planned now (the config or t3rl changed), or made from such an output.
    unusable: dict[str, str] = {}
    decisions: list[Decision] = []
    for stage in plan.stages:
        name = stage.name
        rec = state.stages.get(name)
        upstream = upstream_ids(stage, current)
        fp = fingerprint(plan, stage)
        complete = bool(stage.complete_when) and all(exists(p) for p in stage.complete_when)
        done = rec is not None and rec.status in ("succeeded", "skipped")
        if name not in selected:
            current[name] = rec.run_id if done else (f"complete:{fp}" if complete else None)
            if done and names.index(name) < first_selected:
                assert rec is not None
                why = _unusable(plan, stage, rec, hashes, {k: unusable[k] for k in upstream if k in unusable})
                if why is not None:
                    current[name] = None
                    unusable[name] = why
            decisions.append(Decision(name, "outside", "not selected", output_id=current[name]))
            continue
        missing = [p for p, run_id in upstream.items() if run_id is None]
        if missing:
            why = "".join(f"; {p}: {unusable[p]}" for p in missing if p in unusable)
            state_of = "cannot be read" if why else "has not succeeded in this run dir"
            raise PipelineError(
                f"stage '{name}' needs the outputs of {', '.join(missing)}, which {state_of}{why}; run "
                "without --from/--only (or --from the first of them)"
            )
        # A record written before upstreams were per dependency lists every earlier stage; only the
        # stages this one reads count.
        same_inputs = (
            rec is not None
            and same_command(rec, plan, stage)
            and all(rec.upstream.get(k) == v for k, v in upstream.items())
        )
        markers_ok = not stage.complete_when or complete
        damage = None
        if done and same_inputs and markers_ok and name not in forced:
            assert rec is not None
            damage = _damage(plan, stage, rec, hashes)
            if damage is None:
                current[name] = rec.run_id
                decisions.append(
                    Decision(name, "cached", "unchanged since it succeeded", output_id=rec.run_id)
                )
                continue
            damage = "output damaged: " + damage.replace(f"{plan.run_dir}/", "")
        in_place = rec is not None and not done and same_inputs
        inside = str(Path(plan.run_dir) / "stages" / name)
        # A stage dir no record accounts for (state.json deleted, or the stage's record taken out of it,
        # by hand) holds an output of unknown command and inputs: moved aside, never run into (an eval's
        # --resume went on from its episodes, a train stage from its checkpoint).
        unrecorded = rec is None and exists(inside)
        supersede = (rec is not None and not in_place) or unrecorded
        # A damaged output is never adopted as complete: its markers may outlive the damage.
        survives = (
            complete
            and damage is None
            and not (supersede and any(p.startswith(inside + "/") for p in stage.complete_when))
        )
        if survives and name not in forced:
            current[name] = f"complete:{fp}"
            decisions.append(
                Decision(name, "complete", "output exists and is complete", supersede, current[name])
            )
            continue
        current[name] = f"pending:{name}"
        if (
            in_place
            and rec is not None
            and rec.status == "running"
            and name not in forced
            and exit_record(exit_file(plan.run_dir, name), rec.run_id) == 0
        ):
            why = "its command exited 0 before t3rl stopped; its outputs are checked, not run again"
            decisions.append(Decision(name, "finish", why, False))
        elif in_place:
            decisions.append(Decision(name, "resume", f"unfinished ({rec.status}); same command", False))
        else:
            reason = damage or (
                UNRECORDED if unrecorded else _why_run(rec, plan, stage, upstream, name in forced)
            )
            decisions.append(Decision(name, "run", reason, supersede))
    return decisions


def _unusable(
    plan: Plan, stage: Stage, rec: StageRecord, hashes: FileHashes | None, upstream: Mapping[str, str]
) -> str | None:
    """Why a finished stage outside --from/--only cannot be read by the stages selected, or None. Its
    output must be what the plan's stage makes now: intact, made by the command planned now (a config
    changed since leaves the old output: read, it mixed the two configs), from usable inputs."""
    damage = _damage(plan, stage, rec, hashes)
    if damage is not None:
        return "output damaged: " + damage.replace(f"{plan.run_dir}/", "")
    if not same_command(rec, plan, stage):
        return "its command changed since it succeeded (the config or t3rl changed): its output is stale"
    if upstream:
        return f"it was made from {', '.join(upstream)}, which cannot be read"
    return None


def _damage(plan: Plan, stage: Stage, rec: StageRecord, hashes: FileHashes | None) -> str | None:
    """How a finished stage's outputs differ from its record, or hold less than the stage declares (a
    record of an older t3rl, which checked only that they exist); None when intact."""
    return first_mismatch(rec.outputs, verified_outputs(plan, stage), hashes) or first_shortfall(stage.verify)


def refused_in_a_new_record(selection: Selection, plan: Plan, run_dir: Path) -> list[Problem]:
    """What `decide` will refuse of `selection` in the new record `run_dir` (its name still a placeholder:
    its parent is read), as the pre-flight's error at the option: `t3rl run --only train` of a new run was
    refused only once its run dir was made."""
    unmade = selection.unmade(plan)
    if unmade is None:
        return []
    flag = selection.flag()
    why, fix = _selected_in_a_new_record(run_dir, flag, *unmade)
    return [Problem(flag.split()[0], why, f"command line option {flag}", fix)]


def _selected_in_a_new_record(run_dir: Path, flag: str, stage: str, missing: list[str]) -> tuple[str, str]:
    """Why `flag` cannot start a new run (or plan) at `stage`, and the fix: the resume of the latest run of
    the experiment it was likely meant for: `t3rl run +experiment=quickstart --from eval_tiny`, typed to
    run eval_tiny again, was told to run without --from, of a run dir it had just made."""
    import shlex  # lazy: only for this refusal

    try:  # the runs beside it: a sweep point's are its sweep's other points, none of them this one's
        earlier = (
            []
            if (run_dir.parent / "sweep.json").exists()
            else sorted(
                p
                for p in run_dir.parent.iterdir()
                if p != run_dir and RunDir(p).exists() and not RunDir(p).is_plan()
            )
        )
    except OSError:
        earlier = []
    head = (
        f"{flag} selects stages of a run dir that ran before, and this one is new: stage '{stage}' needs "
        f"the outputs of {', '.join(missing)}, which none of its stages has made"
    )
    if not earlier:
        return head, f"drop {flag.split()[0]} (a new run starts at its first stage)"
    resume = shlex.join(["t3rl", "run", "--run-dir", str(earlier[-1]), *flag.split()])
    return head, (
        f"for the latest run of this experiment: {resume} (`t3rl runs` lists the others), "
        f"or drop {flag.split()[0]} for a new run from its first stage"
    )


def exit_file(run_dir: Path, name: str) -> Path:
    """stages/<name>/exit_code.json: the last execution's exit code, written by its own process."""
    return Path(run_dir) / "stages" / name / "exit_code.json"


def upstream_ids(stage: Stage, current: Mapping[str, _Id]) -> dict[str, _Id]:
    """The output id of each stage `stage` reads from, in plan order, out of `current` (every
    earlier stage's)."""
    reads = stage.reads_from()
    later = [name for name in reads if name not in current]
    if later:
        raise PipelineError(
            f"stage '{stage.name}' reads the output of {', '.join(later)}, which is not an earlier "
            "stage of the plan"
        )
    return {name: output for name, output in current.items() if name in reads}


def verified_outputs(plan: Plan, stage: Stage) -> tuple[str, ...]:
    """What a resume checks of a finished stage: its declared outputs and its outputs.json."""
    return (*stage.verify, str(Path(plan.run_dir) / "stages" / stage.name / "outputs.json"))


def fingerprint(plan: Plan, stage: Stage) -> str:
    """The fingerprint a record keeps: of the stage's command with the run dir's own paths relative to it
    (a run dir moved or copied elsewhere resumes with nothing rerun for the move), and so the entries of
    the content-keyed stores it names (`Plan.stores`: a conversion in `paths.checkpoints_dir` moved)."""
    return stage.fingerprint(anchor=plan.run_dir, stores=plan.stores)


def older_fingerprints(plan: Plan, stage: Stage) -> tuple[str, str]:
    """What older t3rls recorded for the command planned now: anchored at the run dir alone (the stores'
    paths absolute), and not anchored at all. A record holding one still counts where it was written, and
    a resume that keeps the stage writes the current one into it (`upgrade_fingerprints`)."""
    return stage.fingerprint(anchor=plan.run_dir), stage.fingerprint()


def same_command(rec: StageRecord, plan: Plan, stage: Stage) -> bool:
    """Whether `rec` was written for the stage's command as planned now, by this t3rl or an older one."""
    # The older ones are computed only for a record that does not hold the current one (each hashes the
    # stage's command and the files it reads again).
    return rec.fingerprint == fingerprint(plan, stage) or rec.fingerprint in older_fingerprints(plan, stage)


def upgrade_fingerprints(plan: Plan, run_dir: RunDir, state: RunState, decisions: list[Decision]) -> None:
    """Rewrite an older fingerprint of each stage kept as it is into the current one: read and upgraded,
    not a rerun, so a store moved after this resume (`paths.checkpoints_dir` on another machine) keeps it."""
    kept = [
        (state.stages[d.stage], fingerprint(plan, plan.stage(d.stage)))
        for d in decisions
        if d.action == "cached"
    ]
    older = [(rec, current) for rec, current in kept if rec.fingerprint != current]
    for rec, current in older:
        rec.fingerprint = current
    if older:
        run_dir.save_state(state)


def _why_run(
    rec: StageRecord | None, plan: Plan, stage: Stage, upstream: dict[str, str | None], forced: bool
) -> str:
    if forced:
        return "selected by --from/--only"
    if rec is None:
        return "never ran"
    if not same_command(rec, plan, stage):
        return "its command, env or config changed"
    changed = [k for k in upstream if rec.upstream.get(k) != upstream[k]]
    if changed:
        return f"upstream ran again: {', '.join(changed)}"
    return "its output is gone"


class Reporter(Protocol):
    """Progress callbacks (the CLI prints them; tests may record them)."""

    def decisions(self, plan: Plan, decisions: list[Decision]) -> None: ...

    def stage_started(self, stage: Stage, decision: Decision, attempt: int) -> None: ...

    def stage_finished(self, stage: Stage, result: StageResult, seconds: float) -> None: ...

    def note(self, stage: Stage, text: str) -> None: ...


class SilentReporter:
    def decisions(self, plan: Plan, decisions: list[Decision]) -> None:
        pass

    def stage_started(self, stage: Stage, decision: Decision, attempt: int) -> None:
        pass

    def stage_finished(self, stage: Stage, result: StageResult, seconds: float) -> None:
        pass

    def note(self, stage: Stage, text: str) -> None:
        pass


# A plain class, not a dataclass: a cold `t3rl plan` imports this module, and a dataclass compiles its
# methods from text as its class is created (~1.9 M instructions).
class PipelineResult:
    def __init__(
        self, status: str, decisions: list[Decision], results: dict[str, StageResult] | None = None
    ) -> None:
        # succeeded | failed | stopped | planned
        self.status, self.decisions = status, decisions
        self.results: dict[str, StageResult] = {} if results is None else results

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        theirs = (other.status, other.decisions, other.results)  # type: ignore[attr-defined]
        return (self.status, self.decisions, self.results) == theirs

    def __repr__(self) -> str:
        return (
            f"PipelineResult(status={self.status!r}, decisions={self.decisions!r}, results={self.results!r})"
        )

    @property
    def failed_stage(self) -> str | None:
        return next((k for k, r in self.results.items() if r.status in ("failed", "stopped")), None)


@contextmanager
def run_dir_lock(run_dir: RunDir) -> Iterator[None]:
    """One pipeline per run dir at a time (released by the OS if this process dies)."""
    try:
        with exclusive_lock(run_dir.path / ".lock"):
            yield
    except LockHeld as held:
        raise _in_use(run_dir, held) from None


def refuse_in_use(run_dir: RunDir) -> None:
    """Refuse a resume of a run dir another launcher holds at once, before its config is composed: the
    refusal came after the config's changes were shown, worded as a resume that would keep the previous
    config.yaml under superseded/, which it never did. (The lock itself is still taken by `run_pipeline`:
    a launcher starting after this check is refused there.)"""
    lock = run_dir.path / ".lock"
    if is_locked(lock):
        raise _in_use(run_dir, LockHeld(str(lock), lock_holder(lock)))


def _in_use(run_dir: RunDir, held: LockHeld) -> PipelineError:
    return PipelineError(
        f"{run_dir.path} is in use by another t3rl process{held.who()}: wait for it to finish or stop "
        "it, then run the same command again"
    )


def preview(
    plan: Plan,
    run_dir: RunDir,
    *,
    from_stage: str | None = None,
    only: str | None = None,
    reporter: Reporter | None = None,
) -> PipelineResult:
    """What `run_pipeline` would do in an existing run dir, read-only: no lock, no file written."""
    try:
        state = run_dir.load_state()
    except RunDirError as err:
        raise PipelineError(str(err)) from err
    hashes = FileHashes.load(run_dir.file_hashes_file)
    decisions = decide(plan, state, from_stage=from_stage, only=only, hashes=hashes)
    (reporter or SilentReporter()).decisions(plan, decisions)
    return PipelineResult("planned", decisions)


def changes(decisions: list[Decision]) -> list[Decision]:
    """The decisions that change a run dir: its stages that run (or resume, or finish) and those whose
    existing output is adopted as complete. None: a resume of it is idle, nothing it recorded is stale (a
    sweep's resume keeps such a point as it is, launch.run.sweep_runs)."""
    return [d for d in decisions if d.executes or d.action == "complete"]


def run_pipeline(
    plan: Plan,
    run_dir: RunDir,
    executor: Executor,
    *,
    from_stage: str | None = None,
    only: str | None = None,
    reporter: Reporter | None = None,
    record: Callable[[], None] | None = None,
) -> PipelineResult:
    """Run what `decide` says, recording each stage's state as it goes (nothing for a dry executor).

    `record` writes the run's own record (config, overrides and their history, manifest): called
    under the run dir's lock once the selection and the pre-flight checks passed, so a refused
    command (dir in use, damaged input of --only, missing install) leaves the record as it was."""
    reporter = reporter or SilentReporter()
    with run_dir_lock(run_dir):
        if not executor.dry:
            run_dir.remove_stale_temporaries()  # a killed launcher's; no other writes the record now
        try:
            state = run_dir.load_state()
        except RunDirError as err:
            raise PipelineError(str(err)) from err
        hashes = FileHashes.load(run_dir.file_hashes_file)
        decisions = decide(plan, state, from_stage=from_stage, only=only, hashes=hashes)
        reporter.decisions(plan, decisions)
        if not executor.dry:
            upgrade_fingerprints(plan, run_dir, state, decisions)
        if executor.dry:
            if record is not None:
                record()
            # Only stages that never ran get files: an existing stage dir documents its own output.
            for decision in decisions:
                if decision.action == "run" and not decision.supersede:
                    stage = plan.stage(decision.stage)
                    run_dir.write_files(stage.files)
                    run_dir.write_stage_command(stage.name, stage.script())
            return PipelineResult("planned", decisions)
        if copy_of(run_dir, state) is None:  # a copy's records name its original's executions
            _refuse_out_of_reach(run_dir, state, decisions, executor_kind(executor), {from_stage, only})
        missing = executor.preflight([plan.stage(d.stage) for d in decisions if d.executes])
        if missing:
            executor.close()
            raise PipelineError(
                "this machine cannot run the plan; nothing was started:\n  "
                + "\n  ".join(missing)
                + "\n(`t3rl plan` writes every command without running it; executor=ray or "
                "executor=slurm run the GPU stages on a cluster)"
            )
        # Every way out below records how the pipeline ended (state.json's `pipeline`), so a run stopped
        # between stages (no stage's record says so) never reads as `planned`, nor as `succeeded`.
        # A resume that changes nothing (every stage cached) leaves a succeeded record as it is.
        idle = not changes(decisions)
        recorded = not (idle and (state.pipeline or {}).get("status") in (None, "succeeded"))
        where: list[str] = []
        try:
            if record is not None:
                record()
            if recorded:
                run_dir.pipeline_started(state)
            forced = {from_stage, only} - {None}

            def redecide() -> list[Decision]:
                return decide(plan, state, from_stage=from_stage, only=only, hashes=hashes)

            result = _execute(
                plan, run_dir, executor, state, decisions, reporter, hashes, where, forced, redecide
            )
            failed = result.failed_stage
            ended = "" if failed is None else f"{failed}: {result.results[failed].message}"
            if recorded:
                run_dir.pipeline_ended(state, result.status, ended)
        except BaseException as err:
            if recorded:
                _record_stop(run_dir, state, err, where)
            raise
        finally:
            executor.close()
        return result


def _refuse_out_of_reach(
    run_dir: RunDir, state: RunState, decisions: list[Decision], kind: str | None, forced: set[str | None]
) -> None:
    """Refuse to run a stage whose recorded execution may still run where this t3rl cannot see nor stop
    it (executors.base.out_of_reach): run, the stage ran twice at once, both writing one output. A stage
    named by --from/--only is the user's word that it runs there no more."""
    for decision in decisions:
        rec = state.stages.get(decision.stage)
        if not decision.executes or rec is None or rec.status != "running" or decision.stage in forced:
            continue
        reach = out_of_reach(decision.stage, rec.handle, kind)
        if reach is not None:
            why, go_on, args = reach
            raise PipelineError(
                f"{why}: run here, the stage would run twice at once, writing one output; {go_on}: t3rl "
                f"run --run-dir {run_dir.path} {args} (nothing was started)"
            )


def _record_stop(run_dir: RunDir, state: RunState, err: BaseException, where: list[str]) -> None:
    """Record the pipeline stopped (or failed, for an error of t3rl's own) at the stage it was at."""
    if isinstance(err, KeyboardInterrupt):
        status, why = "stopped", stop_reason(err)
    elif isinstance(err, BrokenPipeError | SystemExit):
        status, why = "stopped", READER_GONE
    else:
        status, why = "failed", f"t3rl error: {type(err).__name__}: {err}"
    at = f" at {where[-1]}" if where else " before its first stage"
    with suppress(OSError):  # the record cannot be written (a full disk): the stage records say what they can
        run_dir.pipeline_ended(state, status, why + at)


def _execute(
    plan: Plan,
    run_dir: RunDir,
    executor: Executor,
    state: RunState,
    decisions: list[Decision],
    reporter: Reporter,
    hashes: FileHashes,
    where: list[str],
    forced: set[str | None],
    redecide: Callable[[], list[Decision]],
) -> PipelineResult:
    """Carry out `decisions`; `where` gets each stage's name as it is reached (for a stop's record). A
    stage that ran again and wrote the very output it had (`_Ran.same_output`) keeps its output's id, and
    the stages after it are decided again: those that read it were made from that output and stay."""
    result = PipelineResult("succeeded", decisions)
    # The hashes `decide` computed (a rebuilt output's files) are not computed again next time.
    hashes.save(run_dir.file_hashes_file)
    current: dict[str, str] = {}
    index = -1
    while index + 1 < len(decisions):
        index += 1
        decision = decisions[index]
        stage = plan.stage(decision.stage)
        where.append(stage.name)
        upstream = upstream_ids(stage, current) if decision.executes or decision.action == "complete" else {}
        if decision.action in ("cached", "outside"):
            if decision.output_id is not None:
                current[stage.name] = decision.output_id
            continue
        if decision.supersede:
            run_dir.supersede(stage.name, stage.files)
        if decision.action == "complete":
            assert decision.output_id is not None
            current[stage.name] = _adopt(plan, run_dir, state, stage, decision, upstream, hashes)
            continue
        if decision.action == "finish":
            finished = _finish_exited(plan, run_dir, executor, state, stage, reporter, hashes)
            if finished is not None:
                current[stage.name] = finished
                continue
            decision = decision._replace(action="resume", reason="its outputs were not all written")
        with _shared_output(plan, stage, reporter) as waited:
            # Adopted only when another builder finished it while this one waited: an output that was
            # there (complete markers and all) when `decide` chose to run the stage is damaged or stale.
            if waited and all(os.path.exists(p) for p in stage.complete_when):
                # Another run or sweep point built it while this one waited: built once, adopted here.
                adopted = Decision(
                    stage.name,
                    "complete",
                    "built meanwhile by another run",
                    False,
                    f"complete:{fingerprint(plan, stage)}",
                )
                current[stage.name] = _adopt(plan, run_dir, state, stage, adopted, upstream, hashes)
                continue
            outcome = _run_stage(
                plan, run_dir, executor, state, stage, decision, reporter, hashes, upstream, forced
            )
        result.results[stage.name] = outcome.result
        if outcome.result.status != "succeeded":
            result.status = outcome.result.status
            return result
        current[stage.name] = outcome.run_id
        if outcome.same_output:
            decisions[index + 1 :] = _kept_downstream(
                stage, decisions[index + 1 :], redecide(), reporter, plan
            )
    return result


def _kept_downstream(
    stage: Stage, planned: list[Decision], now: list[Decision], reporter: Reporter, plan: Plan
) -> list[Decision]:
    """The decisions after `stage` once it wrote the output it had before: decided again, each change
    said on its stage's line (what was to run because `stage` ran again is cached)."""
    again = {d.stage: d for d in now}
    kept = [again[d.stage] for d in planned]
    for before, after in zip(planned, kept, strict=True):
        if before.executes and not after.executes:
            reporter.note(
                plan.stage(after.stage),
                f"{after.action} ({after.reason}): {stage.name} wrote the same output it had before",
            )
    return kept


def shared_output(plan: Plan, stage: Stage) -> str | None:
    """The directory of a stage's output that other runs share (a cache outside the run dir), or None."""
    for path in stage.complete_when[:1]:
        parent = str(Path(path).parent)
        if not parent.startswith(str(plan.run_dir) + "/"):
            return parent
    return None


@contextmanager
def _shared_output(plan: Plan, stage: Stage, reporter: Reporter) -> Iterator[bool]:
    """Builders of one shared output take turns: the first builds it, the others wait and adopt it.
    Yields whether this one had to wait for another builder."""
    shared = shared_output(plan, stage)
    if shared is None:
        yield False
        return
    waited: list[bool] = []

    def waiting() -> None:
        waited.append(True)
        reporter.note(stage, f"waiting for another run building {shared}")

    with waiting_lock(Path(shared + ".lock"), waiting):
        yield bool(waited)


def _adopt(
    plan: Plan,
    run_dir: RunDir,
    state: RunState,
    stage: Stage,
    decision: Decision,
    upstream: dict[str, str],
    hashes: FileHashes,
) -> str:
    """Record a stage whose output exists and is complete as skipped; its output id."""
    assert decision.output_id is not None
    run_dir.write_stage_outputs(stage.name, stage.outputs)
    record = StageRecord(
        "skipped",
        fingerprint(plan, stage),
        decision.output_id,
        upstream,
        finished_at=now(),
        message=decision.reason,
        outputs=digests(verified_outputs(plan, stage), hashes),
    )
    run_dir.record(state, stage.name, record)
    hashes.save(run_dir.file_hashes_file)
    return record.run_id


def _finish_exited(
    plan: Plan,
    run_dir: RunDir,
    executor: Executor,
    state: RunState,
    stage: Stage,
    reporter: Reporter,
    hashes: FileHashes,
) -> str | None:
    """Record a stage whose command exited 0 before t3rl was stopped, from its outputs (what it left
    running is stopped first, as the finished run would have); its run id, or None when an output it
    declares is missing (it then runs again in place)."""
    record = state.stages[stage.name]
    _stop_stale(executor, stage, record, reporter, copy_of(run_dir, state))
    outcome = _check_outputs(plan, run_dir, stage, record, StageResult("succeeded", 0), hashes)
    if outcome.status != "succeeded":
        return None
    _finish(run_dir, state, stage.name, record, outcome)
    hashes.save(run_dir.file_hashes_file)
    reporter.stage_finished(stage, outcome, 0.0)
    return record.run_id


def _stop_stale(
    executor: Executor, stage: Stage, record: StageRecord, reporter: Reporter, original: str | None
) -> None:
    """Stop what a dead t3rl left running of `record`'s execution: by its handle, or by its run id when
    it died before it recorded one. In a copy of a run dir whose `original` is still there, the record's
    execution is the original's, writing there: it is left running (stopping it stopped the original
    run's stage, as a copy's records name the very same execution)."""
    if original is not None:
        reporter.note(stage, f"left running for {original}, of which this run dir is a copy: not stopped")
        return
    note = executor.stop_stale(stage, {**record.handle, "run_id": record.run_id})
    if note:
        reporter.note(stage, note)


def copy_of(run_dir: RunDir, state: RunState) -> str | None:
    """The run dir `run_dir` was copied from, while that one still exists (a dir moved has none left)."""
    was = state.written_in
    if was is None or Path(was) == run_dir.path or not os.path.isdir(was):
        return None
    return was


class _Ran(Record):
    result: StageResult
    run_id: str
    # It ran again and wrote, byte for byte, the output its previous record holds: its id is kept.
    same_output: bool = False


def _run_stage(
    plan: Plan,
    run_dir: RunDir,
    executor: Executor,
    state: RunState,
    stage: Stage,
    decision: Decision,
    reporter: Reporter,
    hashes: FileHashes,
    upstream: dict[str, str],
    forced: set[str | None],
) -> _Ran:
    """Run one stage with the executor, recording it before, when it starts and when it ends."""
    rec = state.stages.get(stage.name)
    if rec is not None and rec.status == "running":
        # The t3rl process that ran it died (we hold the run dir's lock): stop its leftovers first.
        _stop_stale(executor, stage, rec, reporter, copy_of(run_dir, state))
    from launch.run.inherited_env import inherited  # lazy: only when a stage runs, not for a plan

    attempt = (rec.attempts + 1) if (decision.action == "resume" and rec) else 1
    run_id = uuid.uuid4().hex[:12]
    run_dir.write_files(stage.files)
    command_file = run_dir.write_stage_command(stage.name, stage.script())
    record = StageRecord(
        "running",
        fingerprint(plan, stage),
        run_id,
        upstream,
        attempts=attempt,
        started_at=now(),
        code=_code(run_dir),
        environ=inherited(os.environ) if executor.passes_environment(stage) else None,
    )
    run_dir.record(state, stage.name, record)

    def started(handle: dict[str, Any], record: StageRecord = record, name: str = stage.name) -> None:
        record.handle = started_by(executor_kind(executor), handle)
        run_dir.record(state, name, record)

    ctx = StageContext(
        run_dir=run_dir.path,
        stage_dir=run_dir.stage_dir(stage.name),
        command_file=command_file,
        log_file=run_dir.stage_dir(stage.name) / "log.txt",
        attempt=attempt,
        plan=plan,
        on_started=started,
        exit_file=exit_file(run_dir.path, stage.name),
        run_id=run_id,
    )
    started = time.monotonic()
    try:
        reporter.stage_started(stage, decision, attempt)
        outcome = executor.run_stage(stage, ctx)
    except KeyboardInterrupt as err:
        outcome = StageResult("stopped", None, stop_reason(err))
        _finish(run_dir, state, stage.name, record, outcome)
        reporter.stage_finished(stage, outcome, time.monotonic() - started)
        raise
    except (BrokenPipeError, SystemExit):  # rich exits when the reader of its output went away
        _finish(run_dir, state, stage.name, record, StageResult("stopped", None, READER_GONE))
        raise
    except Exception as err:
        outcome = StageResult("failed", None, f"executor error: {type(err).__name__}: {err}")
        _finish(run_dir, state, stage.name, record, outcome)
        raise
    if outcome.status == "succeeded":
        outcome = _check_outputs(plan, run_dir, stage, record, outcome, hashes)
    same = (
        outcome.status == "succeeded" and stage.name not in forced and _same_output(plan, stage, rec, record)
    )
    if same:
        assert rec is not None
        record.run_id = rec.run_id  # the output the stages reading it were made from
    _finish(run_dir, state, stage.name, record, outcome)
    hashes.save(run_dir.file_hashes_file)
    reporter.stage_finished(stage, outcome, time.monotonic() - started)
    return _Ran(outcome, record.run_id, same)


def _same_output(plan: Plan, stage: Stage, before: StageRecord | None, now: StageRecord) -> bool:
    """Whether a stage that ran again because its command changed (prepared data rebuilt into another
    cache dir: a run dir resumed on another machine, `$T3RL_CACHE_DIR` changed) wrote, by content, every
    declared output its previous success holds: its output is then the same one, and so is its id. What
    identifies an output is its content: a new id reran every stage reading it, a train stage from
    scratch with its checkpoint superseded. (A stage rerun for a damaged output or by --from/--only gets
    a new id, as before: what reads it runs again.)"""
    if (
        before is None
        or before.status != "succeeded"
        or not stage.verify
        or same_command(before, plan, stage)
    ):
        return False
    return all(
        before.outputs.get(path) not in (None, "") and before.outputs.get(path) == now.outputs.get(path)
        for path in stage.verify
    )


def _code(run_dir: RunDir) -> dict[str, Any] | None:
    """The git state of the code this attempt runs, as its manifest records it (None without one)."""
    code = run_dir.read_manifest().get("git")
    return code if isinstance(code, dict) else None


def _check_outputs(
    plan: Plan, run_dir: RunDir, stage: Stage, record: StageRecord, outcome: StageResult, hashes: FileHashes
) -> StageResult:
    """A stage that exited 0 succeeded only if it wrote every output it declares; their digests go
    into its record, for the next resume to check."""
    run_dir.write_stage_outputs(stage.name, stage.outputs)
    record.outputs = digests(verified_outputs(plan, stage), hashes)
    missing = [path for path, value in record.outputs.items() if value is None]
    if missing:
        shown = ", ".join(p.replace(f"{plan.run_dir}/", "") for p in missing)
        return StageResult("failed", outcome.returncode, f"exited 0 but did not write {shown}")
    short = first_shortfall(stage.verify)
    if short is not None:
        shown = short.replace(f"{plan.run_dir}/", "")
        return StageResult("failed", outcome.returncode, f"exited 0 but {shown}")
    disagreement = manifest_disagreement(record.outputs)
    if disagreement is not None:
        return StageResult("failed", outcome.returncode, disagreement.replace(f"{plan.run_dir}/", ""))
    return outcome


# Why a stage is recorded stopped when t3rl could no longer print (`t3rl run … | head -1`).
READER_GONE = "stopped: the reader of t3rl's output went away (a pipe closed)"


def _finish(run_dir: RunDir, state: RunState, name: str, record: StageRecord, outcome: StageResult) -> None:
    record.status = (
        "succeeded"
        if outcome.status == "succeeded"
        else "stopped"
        if outcome.status == "stopped"
        else "failed"
    )
    record.returncode = outcome.returncode
    record.message = outcome.message
    record.finished_at = now()
    run_dir.record(state, name, record)
