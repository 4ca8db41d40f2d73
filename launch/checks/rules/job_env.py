"""The environment variables a config sets for processes t3rl starts, against what their readers need.

A variable set in `hardware.env_vars` (the train job's Ray runtime env, every worker of it) or in another
environment mapping of the config (a sandbox's `env`, every code cell) takes the place of what the
process would otherwise have. One table (`READERS`) declares, per variable, who else sets or reads it:

- `owned`: set by what runs the job, in every process, after the runtime env: Ray's job supervisor
  points the driver at its cluster (RAY_ADDRESS); slime's training actor writes torch.distributed's
  rendezvous (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK: slime/ray/train_actor.py). A
  value given is replaced, or points the job at another cluster: refused, deleting it the fix. The
  variables t3rl itself writes (PYTHONPATH, WANDB_DIR, CUDA_VISIBLE_DEVICES, …) are one_truth's.
- `search list`: a ':'-separated list the worker already has (the executables Triton's and DeepGEMM's
  JIT call, the CUDA and NCCL libraries of the image): a value that does not name the worker's own
  (`${oc.env:NAME}`, which Ray expands on the worker) replaces it. Warned about, the extension the fix.
- a domain: a value its reader does not take. Python refuses to start on a PYTHONHASHSEED that is
  neither `random` nor an integer below 2**32 (every worker, every cell: refused); libgomp, NCCL and
  CUDA ignore a value outside theirs and go on with their default (a warning, the value meant the fix).
  Any variable's value with white space at its ends (`eth0 `, a YAML block's trailing line break) is
  warned about: readers take the value as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, get_args, get_origin

from pydantic import BaseModel

from launch.checks.context import Context, Scope, per_scope
from launch.config.declared_fields import markers
from launch.config.errors import Problem
from launch.config.fixes import quoted
from t3rl_core.fields import StrKind

# The variables a job's process gets from what runs it, after its runtime env (→ who sets them).
_OWNED = {
    "RAY_ADDRESS": "Ray's job supervisor (the driver joins the cluster the executor started or names)",
    **dict.fromkeys(
        ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"),
        "slime's training actors (torch.distributed's rendezvous, per actor)",
    ),
}
# Lists of directories the worker already has, which a value must extend rather than replace.
_SEARCH_LISTS = {
    "PATH": "the executables the job runs (ray, the compilers Triton's and DeepGEMM's JIT call)",
    "LD_LIBRARY_PATH": "the CUDA, cuDNN and NCCL libraries of the node or image",
}


def _python_hash_seed(value: str) -> bool:
    return value == "random" or (value.isdigit() and int(value) < 2**32)


def _positive_ints(value: str) -> bool:  # libgomp's OMP_NUM_THREADS: a list, one count per nesting level
    return all(part.isdigit() and int(part) > 0 for part in value.split(","))


def _zero_or_one(value: str) -> bool:
    return value in ("0", "1")


_NCCL_DEBUG = ("VERSION", "WARN", "INFO", "TRACE")

# Variable → (what its reader takes, the check, the value to propose, refused (True) or ignored (False)).
_DOMAINS: dict[str, tuple[str, Callable[[str], bool], str, bool]] = {
    "PYTHONHASHSEED": (
        "'random' or an integer 0..4294967295: Python refuses to start on anything else",
        _python_hash_seed,
        "0",
        True,
    ),
    "NCCL_DEBUG": (
        f"one of {', '.join(_NCCL_DEBUG)}: NCCL ignores anything else",
        lambda v: v.upper() in _NCCL_DEBUG,
        "WARN",
        False,
    ),
    **{
        name: (
            "a positive count of threads: libgomp and the BLAS libraries ignore anything else",
            _positive_ints,
            "1",
            False,
        )
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    },
    **{
        name: ("0 or 1: NCCL ignores anything else", _zero_or_one, "1", False)
        for name in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE")
    },
    "CUDA_LAUNCH_BLOCKING": ("0 or 1: CUDA ignores anything else", _zero_or_one, "1", False),
}


def _extends(name: str, value: str) -> bool:
    """Whether a list variable's value keeps the worker's own list (`${oc.env:NAME}`, `${NAME}` or, as
    the shell writes it, `$NAME`: Ray expands the job's variables with os.path.expandvars, both forms)."""
    return re.search(rf"\$(\{{(oc\.env:)?{name}(,[^}}]*)?\}}|{name}(?!\w))", value) is not None


# A reference Ray expands in a job variable on the worker (os.path.expandvars: `$NAME`, `${NAME}`; t3rl
# keeps `${oc.env:NAME}` as `${NAME}`): its value is the worker's, unknown here.
_WORKER_REFERENCE = re.compile(r"\$(\w+|\{[^}]*\})")


def _domain_problems(key: str, name: str, value: str, *, expanded: bool = False) -> Iterator[Problem]:
    if expanded and _WORKER_REFERENCE.search(value):
        return  # `OMP_NUM_THREADS=$SLURM_CPUS_PER_TASK`: what its reader gets is the worker's value
    if value != value.strip() and value.strip() and (name not in _DOMAINS or _DOMAINS[name][1](value)):
        # Every reader takes the value as written: `eth0 ` names no interface, `1\n` (a YAML block's line
        # break) is no number. Free text inside stays as it is.
        yield Problem(
            key,
            f"{name}={value!r} has white space at its ends, which its reader takes as part of the value",
            fix=f"set {key}={quoted(value.strip())}",
            severity="warning",
        )
    if name not in _DOMAINS:
        return
    takes, check, meant, refused = _DOMAINS[name]
    if not check(value):
        yield Problem(
            key,
            f"{name}={value!r}: its reader takes {takes}",
            fix=f"set {key}={quoted(value.strip() if check(value.strip()) else meant)}",
            severity="error" if refused else "warning",
        )


@per_scope
def job_variables_fit_their_readers(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A variable of the train job's environment that what runs the job sets itself, that replaces a
    search list of the worker's, or that its reader does not take (module docstring)."""
    for name, value in scope.hardware.env_vars.items():
        key = f"{scope.hw('env_vars')}.{name}"
        if name in _OWNED:
            yield Problem(
                key,
                f"{name}={value} in the train job's environment: {name} is set in every process of the job "
                f"by {_OWNED[name]}, so this value is replaced or points the job elsewhere",
                fix=f"delete it: ~{key}",
            )
        elif name in _SEARCH_LISTS and not _extends(name, value):
            yield Problem(
                key,
                f"{name}={value} replaces the worker's own {name} ({_SEARCH_LISTS[name]}), which the job "
                "then no longer finds",
                fix=f"set {key}={quoted(value + ':${oc.env:' + name + '}')} (Ray expands it on the worker)",
                severity="warning",
            )
        yield from _domain_problems(key, name, value, expanded=True)


def environments(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Mapping[str, str]]]:
    """(dotted key, mapping) of every environment mapping (a dict keyed by `EnvVarName`) under `model`
    but the hardware sections (the train job's, judged per scope above)."""
    for name, field in type(model).model_fields.items():
        value = getattr(model, name, None)
        key = f"{prefix}{name}"
        if isinstance(value, BaseModel) and name != "hardware":
            yield from environments(value, f"{key}.")
        elif isinstance(value, dict) and _keyed_by_variables(field.annotation):
            yield key, value
        elif isinstance(value, dict):  # a map of sections (stages, services): each one's own
            for item, section in value.items():
                if isinstance(section, BaseModel):
                    yield from environments(section, f"{key}.{item}.")


def _keyed_by_variables(annotation: Any) -> bool:
    if get_origin(annotation) is not dict:
        return False
    key_type = get_args(annotation)[0]
    return any(m.name == "env-var name" for m in markers([], _optional(key_type), StrKind))


def _optional(annotation: Any) -> Any:
    # `markers` reads the metadata of an Annotated arm of a union: a bare Annotated is its own arm.
    return annotation | None


def other_environments_fit_their_readers(ctx: Context) -> Iterator[Problem]:
    """A variable of a sandbox's cells (or any other environment mapping) its reader does not take."""
    for key, mapping in environments(ctx.run):
        for name, value in mapping.items():
            yield from _domain_problems(f"{key}.{name}", name, value)


RULES = (job_variables_fit_their_readers, other_environments_fit_their_readers)
