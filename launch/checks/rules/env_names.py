"""A job variable whose name is one its reader reads in another case or spelling: `nccl_debug`,
`pythonhashseed`, `CUDA_LAUNCH_BLOKING` in `hardware.env_vars`.

A process looks its variables up by their exact names, so the value went into every worker of the job and
nothing read it: NCCL logged nothing, the seed stayed random. The names the pre-flight's rules declare a
reader for (`job_env`'s table, the paths `job_env_paths` judges, the variables t3rl derives and wandb's)
are the known ones; a name that is none of them but one of them in other letters or one letter off is
warned about, with the variable renamed as the fix. A name near none stays the user's own variable.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.checks.rules.job_env import _DOMAINS, _OWNED, _SEARCH_LISTS
from launch.checks.rules.job_env_paths import _DIRECTORIES
from launch.checks.rules.one_truth import _DERIVED_ENV
from launch.checks.rules.tracking_env import _GIVEN
from launch.config.errors import Problem
from launch.config.fixes import quoted

# Read by the job's libraries beside the tables above (wandb's account and key, the hub's token).
_ALSO_READ = frozenset({"WANDB_ENTITY", "WANDB_API_KEY", "HF_TOKEN", "LD_PRELOAD"})
# How close a name must be spelt to a known one (difflib's ratio): one letter off in a name of ten or more
# (`CUDA_LAUNCH_BLOKING`: 0.97), not another variable sharing a prefix (`NCCL_DEBUG_SUBSYS`: 0.74).
_CUTOFF = 0.9


def _known() -> frozenset[str]:
    return frozenset({*_DOMAINS, *_OWNED, *_SEARCH_LISTS, *_DIRECTORIES, *_DERIVED_ENV, *_GIVEN, *_ALSO_READ})


@per_scope
def job_variables_are_named_as_read(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A variable of the job named like a known one in other letters is one nothing reads."""
    known = _known()
    for name, value in scope.hardware.env_vars.items():
        if name in known:
            continue
        meant = next((k for k in known if k == name.upper()), None) or next(
            iter(difflib.get_close_matches(name.upper(), known, n=1, cutoff=_CUTOFF)), None
        )
        if meant is None or meant in scope.hardware.env_vars:
            continue
        key = f"{scope.hw('env_vars')}.{name}"
        typed = ctx.provenance.origin(key)
        source = typed.source if typed is not None else ""
        text = source.removeprefix("override `").removesuffix("`") if source.startswith("override `") else ""
        instead = f" instead of `{text}`" if text else f" (and delete {key})"
        yield Problem(
            key,
            f"{name} is no variable its readers look up (they read {meant}, by that exact name): the job "
            "gets it and nothing reads it",
            fix=f"set +{scope.hw('env_vars')}.{meant}={quoted(value)}{instead}",
            severity="warning",
        )


RULES = (job_variables_are_named_as_read,)
