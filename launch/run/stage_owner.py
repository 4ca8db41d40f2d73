"""Which executor started a stage's execution: recorded in its handle, so only that one resumes it.

A stage's record keeps what its executor started (`StageRecord.handle`: a process group, a SLURM job, a
Ray job), and a resume hands it to the executor's `stop_stale` before it runs the stage again. Each
executor reads only its own kind of handle: resumed with another executor (`executor=local` after a
SLURM run whose launcher died), a job still running was neither found nor stopped, and the stage ran a
second time beside it, both writing one checkpoint. The handle now names its executor (`executor`, its
`executor.kind`), and a resume with another executor of a stage recorded `running` is refused, naming
what may still run and the override that resumes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The key of a handle that names the executor kind that started the execution.
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


def left_by_another(stage: str, handle: Mapping[str, Any], kind: str | None) -> tuple[str, str] | None:
    """(why, fix) when a stage recorded `running` was started by another executor kind than `kind`; None
    when the same one (or an unnamed one: a record of an older t3rl, or a test's executor) resumes it."""
    owner = handle.get(OWNER)
    if kind is None or not isinstance(owner, str) or owner == kind:
        return None
    why = (
        f"stage '{stage}' was left running by executor={owner} ({what_runs(handle)}) when the t3rl that "
        f"ran it stopped, and executor={kind} cannot see or stop it: run here, the stage would run twice "
        "at once, writing one output"
    )
    return why, f"executor={owner}"
