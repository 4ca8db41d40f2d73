"""wandb's names given twice: as `tracking.*` and as the variables wandb reads when `wandb.init` is given
no name. t3rl always gives one: slime's `init_wandb_primary` passes `--wandb-project` and `--wandb-group`
(and the group as the run's name, under `--disable-wandb-random-suffix`), and the launcher's own run passes
project, group and name (`launch.plan.tracking`), each `tracking.<field>` or its default. An explicit
argument of `wandb.init` wins over the variable, so:

- `WANDB_PROJECT`, `WANDB_RUN_GROUP`, `WANDB_NAME` in a job's environment (`hardware.env_vars`) are never
  read: refused, deleting them the fix (the field is where the name goes);
- the same variables exported where t3rl runs, with a value other than the name t3rl gives, are a name the
  user meant and wandb will not use: a warning, the field set to the variable's value the fix.

`WANDB_ENTITY` is read (t3rl passes no team), and the variables t3rl writes itself (WANDB_MODE,
WANDB_DIR) are `one_truth`'s."""

from __future__ import annotations

import os
from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from launch.config.fixes import quoted

# Variable → the tracking field whose value (or default) wandb.init is given instead.
_GIVEN = {"WANDB_PROJECT": "project", "WANDB_RUN_GROUP": "group", "WANDB_NAME": "run_name"}
# What a field's value is when unset (launch.plan.tracking.tracking_names).
_DEFAULT = {"project": "the experiment's name", "group": "the experiment's name", "run_name": "the run's id"}


@per_scope
def job_wandb_names_not_given_twice(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A wandb name in the train job's environment, which slime's explicit argument replaces."""
    if ctx.run.tracking.kind != "wandb":
        return
    for name, value in scope.hardware.env_vars.items():
        field = _GIVEN.get(name)
        if field is None:
            continue
        key = f"{scope.hw('env_vars')}.{name}"
        yield Problem(
            key,
            f"{name}={value} is never read: wandb.init is given the {field.replace('_', ' ')} "
            f"explicitly (tracking.{field}, else {_DEFAULT[field]}), which wins over the variable",
            fix=f"delete it: ~{key} (and set tracking.{field}={quoted(value)} to name it so)",
        )


def exported_wandb_names_agree(ctx: Context) -> Iterator[Problem]:
    """A wandb name exported where t3rl runs that differs from the one t3rl gives wandb."""
    tracking = ctx.run.tracking
    if tracking.kind != "wandb" or tracking.mode == "disabled":
        return
    for name, field in _GIVEN.items():
        value = os.environ.get(name)
        given = getattr(tracking, field)
        if not value or value == given or (given is None and field == "project" and value == ctx.run.name):
            continue
        key = f"tracking.{field}"
        now = f"{key} {given}" if given is not None else f"{key} unset: {_DEFAULT[field]}"
        yield Problem(
            key,
            f"{name}={value} is exported here, but wandb will not read it: t3rl gives wandb.init the "
            f"{field.replace('_', ' ')} explicitly ({now})",
            fix=f"set {key}={quoted(value)}",
            severity="warning",
        )


RULES = (job_wandb_names_not_given_twice, exported_wandb_names_agree)
