"""Job variables that hold paths, declared with the kind of path their readers take.

A train job's variables (`hardware.env_vars`, a stage's own) reach every Ray worker as written: Ray does
not expand them against a directory, and each worker runs in a directory of Ray's own. So:

- a directory variable (HOME, TMPDIR, the XDG, Hugging Face, torch and Triton cache roots) that is not
  absolute names a different directory in every worker: refused, the path from where t3rl runs the fix;
  under the local executor (the job runs here) a HOME that does not exist is warned about: what is kept
  in the home (wandb's key in ~/.netrc, the Hugging Face token, the compile caches) is not found there;
- LD_PRELOAD's shared objects (separated by ':' or spaces) are found by name on the library path or
  opened as a path: a relative path with a '/' is opened from each worker's directory (refused, the
  absolute path the fix); under the local executor a path missing here makes the dynamic loader print
  an error and skip it in every process the job starts (a warning).

A value holding a reference (`${oc.env:NAME}`, which Ray expands on the worker) is not judged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from launch.config.fixes import quoted

# Variables whose value is a directory every library of the job resolves its files under.
_DIRECTORIES = frozenset(
    {
        *("HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"),
        *("HF_HOME", "HF_HUB_CACHE", "HF_DATASETS_CACHE", "TRANSFORMERS_CACHE"),
        *("TORCH_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH"),
    }
)


def _here(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


@per_scope
def job_path_variables_are_paths_the_job_reads(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A path variable of the train job that names a different path in each worker, or nothing here."""
    local = ctx.run.executor.kind == "local"
    for name, value in scope.hardware.env_vars.items():
        key = f"{scope.hw('env_vars')}.{name}"
        if "$" in value or not value.strip():
            continue
        if name in _DIRECTORIES:
            if not os.path.isabs(value):
                yield Problem(
                    key,
                    f"{name}={value} is a relative path: each Ray worker runs in a directory of Ray's own, "
                    "so every worker reads and writes another directory",
                    fix=f"set {key}={quoted(_here(value))}",
                )
            elif name == "HOME" and local and not Path(value).is_dir():
                yield Problem(
                    key,
                    f"HOME={value} does not exist here, where the job runs: what is kept in a home (wandb's "
                    "key in ~/.netrc, the Hugging Face token, the compile caches) is not found there",
                    fix=f"delete it: ~{key}",
                    severity="warning",
                )
        elif name == "LD_PRELOAD":
            yield from _preloads(key, value, local=local)


def _preloads(key: str, value: str, *, local: bool) -> Iterator[Problem]:
    objects = [o for o in re.split(r"[:\s]+", value) if o]
    relative = [o for o in objects if "/" in o and not os.path.isabs(o)]
    if relative:
        meant = ":".join(_here(o) if o in relative else o for o in objects)
        yield Problem(
            key,
            f"LD_PRELOAD names {relative[0]}, a relative path the dynamic loader opens from each worker's "
            "own directory",
            fix=f"set {key}={quoted(meant)}",
        )
        return
    missing = [o for o in objects if os.path.isabs(o) and not os.path.isfile(o)]
    if local and missing:
        kept = ":".join(o for o in objects if o not in missing)
        yield Problem(
            key,
            f"LD_PRELOAD names {missing[0]}, which does not exist here, where the job runs: the dynamic "
            "loader prints an error and skips it in every process the job starts",
            fix=f"set {key}={quoted(kept)}" if kept else f"delete it: ~{key}",
            severity="warning",
        )


RULES = (job_path_variables_are_paths_the_job_reads,)
