"""The executor interface: run one stage's commands somewhere, stream its log, report how it ended.

An executor knows nothing about slime or about resuming: the pipeline (`launch.run.pipeline`) decides
which stages run, writes each stage's `command.sh`, and records state; the executor runs that file
(or, for a train stage, may submit `stage.slime_job` through an SDK) and returns a `StageResult`.
On Ctrl-C it stops what it started and lets KeyboardInterrupt propagate; the pipeline records the
stage as stopped. If the t3rl process itself is killed, the next run of the same run dir hands the
stage's saved handle to `stop_stale` first, so a stage never runs twice at once.

Executors are chosen by `executor.kind` through `EXECUTORS` (kind → "module:Class"); a class is
constructed as `Cls(config, out=<text stream for live output>)`.
"""

from __future__ import annotations

import importlib
import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from launch.checks.rules import kinds
from launch.run.import_check import import_problems
from t3rl_core import outside_json
from t3rl_core.records import Record

if TYPE_CHECKING:
    from launch.plan.build import Plan
    from launch.plan.stages import Stage

ResultStatus = Literal["succeeded", "failed", "stopped", "planned"]

EXECUTORS: dict[str, str] = {
    "dry": "launch.run.executors.dry:DryExecutor",
    "local": "launch.run.executors.local:LocalExecutor",
    "ray": "launch.run.executors.ray_jobs:RayExecutor",
    "slurm": "launch.run.executors.slurm:SlurmExecutor",
}


class StageContext(Record):
    """Where a stage's files are."""

    run_dir: Path
    stage_dir: Path
    # stages/<name>/command.sh, already written: exactly what to run.
    command_file: Path
    # stages/<name>/log.txt: append the stage's output here.
    log_file: Path
    # 1 for the first execution of this stage in this run dir, 2 after a crash or failure, …
    attempt: int
    plan: Plan
    # Call once the stage is started with whatever identifies what runs (a process group, a job id);
    # it is saved in the stage's record, and given to `stop_stale` if this t3rl process dies.
    on_started: Callable[[dict[str, Any]], None] = lambda handle: None
    # Where the command's own process writes its exit code the moment it ends, with this execution's
    # id (`exit_record`): a t3rl killed after that, while it stops what the command left or hashes
    # its outputs, resumes by checking the outputs instead of running a finished command again.
    # None: the executor keeps its own record of how the stage ended (a cluster job's).
    exit_file: Path | None = None
    run_id: str = ""


# Runs the command, then writes {"run_id": …, "returncode": …} beside it (a temp file renamed: a
# reader sees all of it or nothing) and exits with the command's code.
_RECORD_EXIT = (
    'bash "$1"; code=$?; '
    'printf \'{"run_id": "%s", "returncode": %d}\\n\' "$3" "$code" > "$2.tmp" && mv -f "$2.tmp" "$2"; '
    'exit "$code"'
)


def exit_recording(command: Sequence[str], exit_file: Path, run_id: str) -> list[str]:
    """`command` (["bash", SCRIPT]) wrapped to record its exit code in `exit_file` when it ends."""
    *_, script = command
    return ["bash", "-c", _RECORD_EXIT, "t3rl-stage", script, str(exit_file), run_id]


def exit_record(exit_file: Path, run_id: str) -> int | None:
    """The exit code `exit_recording` wrote for the execution `run_id`; None if it has not ended (or
    another execution wrote the file)."""
    try:
        data = outside_json.read_file(exit_file)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("run_id") != run_id
        or not isinstance(data.get("returncode"), int)
    ):
        return None
    return data["returncode"]


class StageResult(Record):
    status: ResultStatus
    returncode: int | None = None
    message: str = ""


class Executor(ABC):
    """Runs stages one at a time."""

    # True: stages are only shown, never run (the pipeline then records nothing).
    dry: bool = False

    def passes_environment(self, stage: Stage) -> bool:
        """Whether `stage`'s processes get this launcher's environment (the local executor's are its
        children; sbatch exports it to a SLURM job): its record then keeps the variables of it that
        change how a stage runs (`launch.run.inherited_env`). Not where they run in another's."""
        return True

    @abstractmethod
    def run_stage(self, stage: Stage, ctx: StageContext) -> StageResult:
        """Run `stage` to completion; KeyboardInterrupt propagates after everything started is stopped."""

    def stop_stale(self, stage: Stage, handle: dict[str, Any]) -> str | None:
        """Stop what an earlier, dead t3rl process left running for `stage` (its `on_started` handle),
        before the stage runs again; returns a line for the log, or None if nothing was running."""
        return None

    def preflight(self, stages: Sequence[Stage]) -> list[str]:
        """What is missing for `stages` where this executor runs them, one line each (empty = ready).

        The default checks each stage's `requires` on this machine, the CUDA GPUs it claims (validate
        does not: GPU plans are validated on CPU machines), and imports its plugin modules with the
        stage's interpreter and PYTHONPATH; executors that run stages elsewhere (a Ray cluster, SLURM
        nodes) check nothing here.
        """
        needed: dict[tuple[str, str], list[str]] = {}
        unset: dict[tuple[str, str], list[str]] = {}
        for stage in stages:
            for path, what in stage.requires.items():
                if not os.path.exists(path):
                    needed.setdefault((path, what), []).append(stage.name)
            for name, what in stage.requires_env.items():
                if not os.environ.get(name):
                    unset.setdefault((name, what), []).append(stage.name)
        return [
            *(
                f"{path} is missing (needed by {', '.join(names)}): {what}"
                for (path, what), names in needed.items()
            ),
            *(
                f"environment variable {name} is not set (needed by {', '.join(names)}): {what}"
                for (name, what), names in unset.items()
            ),
            *gpus_missing(stages),
            *import_problems(stages),
        ]

    def close(self) -> None:  # noqa: B027 - optional hook: most executors hold nothing between stages
        """Release whatever the executor holds between stages (called once, after the last stage)."""


def gpus_missing(stages: Sequence[Stage]) -> list[str]:
    """A line for each stage that claims more CUDA GPUs than this machine shows (none when they cannot
    be counted: `kinds.visible_cuda_gpus`)."""
    needing = [stage for stage in stages if stage.gpus]
    have = kinds.visible_cuda_gpus() if needing else None
    if have is None:
        return []
    machine = "this machine has no CUDA GPU" if have == 0 else f"this machine shows {have} CUDA GPU(s)"
    return [
        f"stage {stage.name} needs {stage.gpus} GPU(s), but {machine} (it runs here)"
        for stage in needing
        if stage.gpus > have
    ]


# Which executor started a stage's execution is recorded in its handle (`executor`: its `executor.kind`),
# so only that one resumes it: each executor's `stop_stale` reads only its own kind of handle, and resumed
# with another (`executor=local` after a SLURM run whose launcher died) a job still running was neither
# found nor stopped, and the stage ran a second time beside it, both writing one checkpoint. OWNER is the
# key of a handle that names the executor kind that started the execution.
OWNER = "executor"


def executor_kind(executor: object) -> str | None:
    """The `executor.kind` an executor runs (None for one built without a config: a test's)."""
    kind = getattr(getattr(executor, "config", None), "kind", None)
    return kind if isinstance(kind, str) else None


def started_by(kind: str | None, handle: Mapping[str, Any]) -> dict[str, Any]:
    """`handle` as the record keeps it: with the executor kind that started it."""
    return {**handle, OWNER: kind} if kind is not None else dict(handle)


def what_runs(handle: Mapping[str, Any]) -> str:
    """What a handle names, for people."""
    if "slurm_job" in handle:
        return f"SLURM job {handle['slurm_job']}"
    if "ray_job" in handle:
        return f"Ray job {handle['ray_job']}" + (f" at {handle['address']}" if handle.get("address") else "")
    if "pgid" in handle:
        return f"process group {handle['pgid']}" + (f" on {handle['host']}" if handle.get("host") else "")
    return "its command (started, not yet identified when t3rl stopped)"


def out_of_reach(stage: str, handle: Mapping[str, Any], kind: str | None) -> tuple[str, str, str] | None:
    """(why, how to go on, the arguments of the `t3rl run --run-dir DIR` that does) when what a stage
    recorded `running` started cannot be seen nor stopped from here: another executor kind than `kind`
    started it, or the local executor on another host (a run dir on shared storage resumed from another
    machine: its process group there is no group of this host's). None when this executor reaches it
    (or the handle names neither: a record of an older t3rl, or a test's executor)."""
    owner, host = handle.get(OWNER), handle.get("host")
    if kind is not None and isinstance(owner, str) and owner != kind:
        return (
            f"stage '{stage}' was left running by executor={owner} ({what_runs(handle)}) when the t3rl that "
            f"ran it stopped, and executor={kind} cannot see or stop it",
            "resume it with the executor that started it",
            f"executor={owner}",
        )
    if "pgid" in handle and isinstance(host, str) and host != socket.gethostname():
        return (
            f"stage '{stage}' was left running on host {host} ({what_runs(handle)}) when the t3rl that ran "
            f"it stopped, and t3rl on {socket.gethostname()} cannot see or stop it",
            f"resume it on {host} (the same command there), or, once it runs there no more, here",
            f"--from {stage}",
        )
    return None


def make_executor(config: Any, out: TextIO | None = None) -> Executor:
    """The executor for `config.kind`."""
    target = EXECUTORS.get(config.kind)
    if target is None:
        raise ValueError(f"unknown executor kind '{config.kind}' (known: {', '.join(sorted(EXECUTORS))})")
    module_name, _, cls_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        raise ValueError(
            f"executor '{config.kind}' is not available in this installation ({module_name})"
        ) from err
    return getattr(module, cls_name)(config, out=out)
