"""Every hook or filter a config names by import path resolves, here and now.

slime imports `--dynamic-sampling-filter-path`, `--custom-*-path` and the like when the job starts on the
GPU nodes; a misspelt one fails there after data preparation and conversion. The curriculum's
`dynamic_sampling_filter` and every slime hook flag in a pass-through argv are resolved at pre-flight
(`t3rl_core.import_paths`, slime's own objects from `launch.config.slime_objects`), each refusal
proposing the nearest import path that exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem, Severity
from launch.config.fixes import list_override
from launch.config.slime_objects import SLIME_OBJECTS
from t3rl_core.import_paths import Unresolved, resolve

# HOOK_FLAG is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
# slime options whose value is a function's import path (not a file: --custom-config-path is one).
HOOK_FLAG = r"^--(custom-(?!config-).*-path|.*-(filter|function|process|hook)-path)$"
_TABLES = {"slime": SLIME_OBJECTS}


@per_scope
def filter_resolves(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """The curriculum's dynamic sampling filter names a function that exists."""
    cur = scope.curriculum
    if cur is None or cur.dynamic_sampling_filter is None:
        return
    key = scope.cur("dynamic_sampling_filter")
    unresolved = resolve(cur.dynamic_sampling_filter, _TABLES)
    if unresolved is not None:
        yield Problem(
            key,
            f"'{cur.dynamic_sampling_filter}' does not resolve: {unresolved.reason}",
            fix=f"set {key}={unresolved.nearest}" if unresolved.nearest else f"set {key}=null",
            severity=_severity(ctx, unresolved),
        )


def _severity(ctx: Context, unresolved: Unresolved) -> Severity:
    """A package missing here may be installed only where a cluster job runs: a warning there."""
    cluster = ctx.run.executor.kind not in ("local", "dry")
    return "warning" if cluster and unresolved.package_missing else "error"


def hook_flags_resolve(ctx: Context) -> Iterator[Problem]:
    """Hook paths passed through to slime in the model's extra_args name functions that exist."""
    key = "model.architecture.extra_args"
    argv = list(ctx.run.model.architecture.extra_args)
    for index, token in enumerate(argv[:-1]):
        flag = token.partition("=")[0]
        if not re.match(HOOK_FLAG, flag):
            continue
        value = token.partition("=")[2] or argv[index + 1]
        unresolved = resolve(value, _TABLES)
        if unresolved is None:
            continue
        fixed = list(argv)
        if unresolved.nearest is not None:
            fixed[index : index + (1 if "=" in token else 2)] = (
                [f"{flag}={unresolved.nearest}"] if "=" in token else [flag, unresolved.nearest]
            )
        else:
            del fixed[index : index + (1 if "=" in token else 2)]
        yield Problem(
            key,
            f"{flag} '{value}' does not resolve: {unresolved.reason}",
            fix=f"set {list_override(key, fixed)}",
            severity=_severity(ctx, unresolved),
        )


RULES = (filter_resolves, hook_flags_resolve)
