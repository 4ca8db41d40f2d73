"""sbatch options that change how t3rl submits and watches a stage's job, declared with what they do to it.

Every stage is one SLURM job that t3rl submits through submitit and then watches until it ends
(`launch.run.executors.slurm`): its script runs one task per node (`--ntasks-per-node=1` over the
stage's nodes, each stage its own count) and starts by changing into the stage's dir, whose log path is
absolute. An `executor.extra_sbatch` entry is added to every stage's job, so an option that breaks
that contract breaks each of them:

- `--ntasks=M` takes precedence over `--ntasks-per-node` (which becomes a maximum): a job of fewer nodes
  than M cannot be placed (sbatch refuses it), one of more is shrunk to M nodes, and Ray waits for GPUs
  that never come;
- `--hold` submits the job held until someone releases it by hand: the stage reads as pending forever;
- `--test-only` submits nothing: sbatch prints an estimate and no job id;
- `--wait` makes sbatch return only when the job ends: t3rl gets no job id to record, stream or cancel;
- `--chdir` does nothing here (a warning: the script changes into the stage's dir first).

Checked and accepted: `--requeue` (the watcher counts REQUEUED and PREEMPTED as running, and a requeued
train stage resumes from its last checkpoint in its own dir), `--begin`, `--dependency`.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.schema import SlurmExecutorConfig

SBATCH = "executor.extra_sbatch"

# Option (exact long name: sbatch's own prefixes of these are also other options' prefixes) → (what it
# does to the stage's job, refused (True) or only without effect (False)).
_CONTROL: dict[str, tuple[str, bool]] = {
    "--ntasks": (
        "takes precedence over the one task per node t3rl's job script runs (--ntasks-per-node=1 over each "
        "stage's own nodes): a stage of fewer nodes is refused by sbatch, one of more is shrunk to that "
        "many nodes and waits for GPUs that never come",
        True,
    ),
    "--hold": ("submits every stage's job held until someone releases it: the run waits forever", True),
    "--test-only": ("makes sbatch submit nothing (an estimate, no job id): no stage ever starts", True),
    "--wait": (
        "makes sbatch return only when the job ends: t3rl gets no job id to record, show the log of, "
        "or cancel on Ctrl-C",
        True,
    ),
    "--chdir": (
        "does nothing: every stage's job script changes into the stage's dir first, and its log path is "
        "absolute",
        False,
    ),
}


def sbatch_keeps_the_job_under_control(ctx: Context) -> Iterator[Problem]:
    """An `extra_sbatch` option that breaks how t3rl submits and watches its jobs (module docstring)."""
    slurm = ctx.run.executor
    if not isinstance(slurm, SlurmExecutorConfig):
        return
    extra = list(slurm.extra_sbatch)
    for index, option in enumerate(extra):
        name, _, value = option.partition("=")
        found = _CONTROL.get(name)
        if found is None or (name == "--ntasks" and {value} == {str(n) for n in _stage_nodes(ctx)}):
            continue  # (--ntasks) every stage runs on that many nodes: the tasks t3rl asks for anyway
        what, refused = found
        yield Problem(
            SBATCH,
            f"{option} {what}",
            fix=f"set {list_override(SBATCH, [*extra[:index], *extra[index + 1 :]])}",
            severity="error" if refused else "warning",
        )


def _stage_nodes(ctx: Context) -> set[int]:
    """The node counts of the run's stages: a train stage's hardware's, one for each other stage (as
    launch.run.executors.slurm places them)."""
    trains = {scope.stage: scope.hardware.nodes for scope in ctx.scopes if scope.stage is not None}
    return {trains.get(name, 1) for name in ctx.run.stages}


RULES = (sbatch_keeps_the_job_under_control,)
