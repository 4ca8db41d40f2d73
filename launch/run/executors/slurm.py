"""executor=slurm: one SLURM job per stage, submitted and watched through submitit.

Each stage gets `stages/<name>/job.sbatch` (`launch.run.executors.sbatch`): it allocates the stage's
nodes, brings a Ray cluster up over them when the stage needs one (train), runs the stage's
`command.sh` on the first node (for a train stage that is slime's `ray job submit`), and stops Ray on
every node when it exits. submitit submits an allocation of the same size (`use_srun=False`: its
Python runs once, on the first node) whose only work is `bash job.sbatch >> log.txt`; the `#SBATCH`
lines in the script then only document it, and `sbatch job.sbatch` alone works the same way.

The SLURM job id is written to `stages/<name>/slurm_job.json` as soon as sbatch answers. A rerun
(resume) asks SLURM about it first: a pending or running job is re-attached (watched until it ends),
a completed one is taken as is, any other end (failed, cancelled, timeout, node failure) is
submitted again. Ctrl-C cancels the job (scancel) and lets KeyboardInterrupt through.

Shared storage: submitit's folder (`executor.folder`, default `<run dir>/slurm`), the run dir and the
Python that runs t3rl must be visible from the nodes, as on any cluster with a shared filesystem;
`executor.setup` lines (e.g. activating that environment) run first in every job script.

submitit is imported lazily.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from launch.config.schema import SlurmExecutorConfig
from launch.config.secrets import scrub_text
from launch.files import write_record
from launch.plan.stages import Stage
from launch.run.executors import records
from launch.run.executors.base import Executor, StageContext, StageResult
from launch.run.executors.sbatch import SbatchJob, render_sbatch, sbatch_parameters

JOB_RECORD = "slurm_job.json"
SCRIPT = "job.sbatch"
# SLURM states of a job that is not over yet: submitit's list but PREEMPTED, SLURM's word for a job ended
# by preemption. A job SLURM requeues is PENDING again at once (sacct shows its latest run), so one still
# PREEMPTED after `SlurmExecutor.preempted_grace_s` was not requeued: submitit counts it as running and
# waits on it forever, and a resume re-attached to it instead of submitting it again.
ACTIVE = frozenset({"READY", "PENDING", "RUNNING", "UNKNOWN", "REQUEUED", "COMPLETING", "CONFIGURING"})
PREEMPTED = "PREEMPTED"
# What an end state means and what to do, for the stage's record (`{limit}`: executor.time_limit, `{run}`:
# the run dir): a bare `ended TIMEOUT` named neither the key that sets the limit nor that a resume goes on.
ENDED = {
    PREEMPTED: "preempted and not requeued: `t3rl run --run-dir {run}` submits it again",
    "TIMEOUT": "its time limit, executor.time_limit={limit}, was reached: raise it, e.g. `t3rl run --run-dir "
    "{run} executor.time_limit=48:00:00` (a train stage continues from its last checkpoint)",
    "OUT_OF_MEMORY": "a process of it ran out of the memory SLURM gave it: ask for all of each node's with "
    "`t3rl run --run-dir {run} 'executor.extra_sbatch=[--mem=0]'`",
    "NODE_FAIL": "a node of it failed: `t3rl run --run-dir {run}` submits it again",
}


@dataclass
class SlurmRecord:
    """`stages/<name>/slurm_job.json`: which SLURM job a stage is."""

    job_id: str
    attempt: int
    folder: str
    script: str
    submitted_at: float
    state: str = "PENDING"


def read_record(stage_dir: Path) -> SlurmRecord | None:
    return records.read_record(stage_dir / JOB_RECORD, SlurmRecord)


def sbatch_job(stage: Stage, ctx: StageContext, run_name: str) -> SbatchJob:
    """The allocation a stage needs: its nodes, their GPUs, a Ray cluster for train stages."""
    nodes = max(stage.nodes, 1)
    return SbatchJob(
        job_name=f"t3rl-{run_name}-{stage.name}",
        nodes=nodes,
        gpus_per_node=-(-stage.gpus // nodes) if stage.gpus else 0,
        needs_ray=stage.needs_ray_head,
        command_file=str(ctx.command_file),
        workdir=str(ctx.stage_dir),
        output=str(ctx.stage_dir / "slurm-%j.out"),
    )


class SlurmExecutor(Executor):
    """Runs every stage as its own SLURM job (see the module docstring)."""

    # Seconds between two looks at a running job (submitit itself asks sacct less often).
    poll_s: float = 5.0
    # Seconds a job may stay PREEMPTED before it counts as ended (SLURM requeues within seconds).
    preempted_grace_s: float = 120.0

    def preflight(self, stages: Sequence[Stage]) -> list[str]:
        """Nothing to check here: every stage runs on the allocated nodes, whose paths differ."""
        return []

    def __init__(self, config: SlurmExecutorConfig | None = None, out: TextIO | None = None) -> None:
        self.config = config or SlurmExecutorConfig()
        self.out = out if out is not None else sys.stdout

    def run_stage(self, stage: Stage, ctx: StageContext) -> StageResult:
        job = sbatch_job(stage, ctx, ctx.plan.name)
        script = ctx.stage_dir / SCRIPT

        write_record(script, scrub_text(render_sbatch(job, self.config)))
        folder = Path(self.config.folder or ctx.run_dir / "slurm") / stage.name
        record, handle = self._attach_or_submit(job, script, folder, ctx)
        ctx.on_started({"slurm_job": record.job_id, "folder": record.folder})
        try:
            state = self._watch(handle, ctx.log_file)
        except KeyboardInterrupt:
            handle.cancel(check=False)
            record.state = "CANCELLED"
            records.write_record(ctx.stage_dir / JOB_RECORD, record)
            raise
        record.state = state
        records.write_record(ctx.stage_dir / JOB_RECORD, record)
        if state == "COMPLETED":
            return StageResult("succeeded", 0, f"SLURM job {record.job_id}")
        meaning = ENDED.get(state, "").format(limit=self.config.time_limit, run=ctx.run_dir)
        meaning = f" ({meaning})" if meaning else ""
        return StageResult(
            "failed", 1, f"SLURM job {record.job_id} ended {state}{meaning}; see {ctx.log_file}"
        )

    def stop_stale(self, stage: Stage, handle: dict[str, Any]) -> str | None:
        """A SLURM job left by a dead t3rl process keeps running: run_stage re-attaches to it."""
        job = handle.get("slurm_job")
        return f"SLURM job {job} outlived the previous t3rl process; re-attaching to it" if job else None

    def _attach_or_submit(
        self, job: SbatchJob, script: Path, folder: Path, ctx: StageContext
    ) -> tuple[SlurmRecord, Any]:
        import submitit  # lazy: submitit (cloudpickle), only when a stage is submitted

        previous = read_record(ctx.stage_dir)
        if previous is not None:
            handle = submitit.SlurmJob(folder=previous.folder, job_id=previous.job_id)
            state = _state(handle)
            if state in ACTIVE or state == "COMPLETED":
                return previous, handle  # never submitted twice
        # The log is the job's once it is submitted (it appends from its node): the launcher writes its
        # header before, never beside it. Written at a re-attach, from the launcher's host, an append to a
        # file on shared storage that another host's job appends to could overwrite the job's lines (NFS
        # appends are not atomic across hosts).
        ctx.log_file.parent.mkdir(parents=True, exist_ok=True)
        with ctx.log_file.open("a", encoding="utf-8") as log:
            log.write(
                f"\n===== t3rl: stage {ctx.stage_dir.name}, attempt {ctx.attempt}, SLURM job script "
                f"{script} =====\n"
            )
        executor = submitit.SlurmExecutor(folder=folder)
        executor.update_parameters(**sbatch_parameters(job, self.config))
        command = ["bash", "-c", 'bash "$0" >>"$1" 2>&1', str(script), str(ctx.log_file)]
        # One task (the first node's) does the work; submitit counts one per node and would wait for all.
        handle = executor.submit(submitit.helpers.CommandFunction(command, verbose=False)).task(0)
        attempt = previous.attempt + 1 if previous else 1
        record = SlurmRecord(handle.job_id, attempt, str(folder), str(script), time.time())
        records.write_record(ctx.stage_dir / JOB_RECORD, record)
        return record, handle

    def _watch(self, handle: Any, log_file: Path) -> str:
        """Wait for the job to end, echoing what it appends to the log; its final SLURM state."""
        offset = log_file.stat().st_size if log_file.exists() else 0
        preempted_at: float | None = None
        while True:
            done = handle.done()
            offset = self._echo(log_file, offset)
            if done:
                return _final_state(handle)
            if (str(handle.state).split() or [""])[0].upper() != PREEMPTED:
                preempted_at = None
            elif preempted_at is None:
                preempted_at = time.monotonic()
            if preempted_at is not None and time.monotonic() - preempted_at >= self.preempted_grace_s:
                return PREEMPTED
            time.sleep(self.poll_s)

    def _echo(self, log_file: Path, offset: int) -> int:
        if not log_file.exists():
            return offset
        with log_file.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
        if data:
            self.out.write(data.decode(errors="replace"))
            self.out.flush()
        return offset + len(data)


def _state(handle: Any) -> str:
    """The job's SLURM state, asking sacct now (a finished job with a result file counts as COMPLETED)."""
    if handle.paths.result_pickle.exists():
        return _final_state(handle)
    return str(handle.get_info(mode="force").get("State") or "UNKNOWN").split()[0].upper()


def _final_state(handle: Any) -> str:
    """COMPLETED when the job's command succeeded; otherwise SLURM's word for how it ended."""
    try:
        handle.result()
    except Exception:  # submitit's FailedJobError / UncompletedJobError: the job did not succeed
        state = str(handle.get_info(mode="force").get("State") or "FAILED").split()[0].upper()
        return "FAILED" if state in ("COMPLETED", *ACTIVE) else state
    return "COMPLETED"
