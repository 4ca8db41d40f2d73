"""A SLURM time limit read as SLURM reads it (`t3rl_core.fields.slurm_fields`): valid, but not what was meant.

SLURM adds a limit's fields up whatever their size, so `99:99:99` is 4-03:40:39 and `1-25:00:00` is
2-01:00:00: a field past its unit (minutes or seconds from 60, hours from 24 beside days) is a typo far
more often than a plan, and is warned about with the limit SLURM will apply as the fix. A limit of a few
minutes is no stage's (a job starts Ray and loads a model first): `2:00` is two minutes to SLURM
(minutes:seconds), where two hours were meant; it is warned about with that reading as the fix. Refused
(by the kind itself) is only what SLURM cannot hold: a sum past a C int of seconds.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.rules.local_dirs import fields_of_kind
from launch.config.errors import Problem
from t3rl_core.fields import SlurmFields, slurm_clock, slurm_fields

# Below this a job ends before any stage could: Ray's start on the job's nodes and a model's load take
# minutes (executor.ray_start_timeout_s waits 10 for the nodes' GPUs by default).
SHORTEST_SECONDS = 600


def time_limits_as_slurm_reads_them(ctx: Context) -> Iterator[Problem]:
    """A SLURM time whose fields overflow their unit, or that is shorter than any stage, is warned about."""
    for key, value, _ in fields_of_kind(ctx.run, "SLURM duration"):
        fields = slurm_fields(value)
        if fields is None or fields.total_seconds == 0:  # no limit (SLURM reads 0 so too)
            continue
        problem = _short(key, value, fields) or _overflowing(key, value, fields)
        if problem is not None:
            yield problem


def _short(key: str, value: str, fields: SlurmFields) -> Problem | None:
    if fields.total_seconds >= SHORTEST_SECONDS:
        return None
    if fields.days is None and fields.hours is None:  # M or M:S: hours (and minutes) were likelier meant
        meant = slurm_clock(fields.total_seconds * 60)
        guess = (
            f"; {value} reads as minutes{':seconds' if fields.seconds is not None else ''}: is it {meant}?"
        )
    else:
        meant, guess = "24:00:00", ""
    return Problem(
        key,
        f"{key}={value} is {slurm_clock(fields.total_seconds)} to SLURM, shorter than any stage (a job "
        f"starts Ray and loads a model first, which takes minutes), so every job is killed at its limit"
        f"{guess}",
        fix=f"set {key}={meant}, or the limit you meant",
        severity="warning",
    )


def _overflowing(key: str, value: str, fields: SlurmFields) -> Problem | None:
    over = [
        name
        for name, field, above, unit in (
            ("hours", fields.hours, fields.days, 24),
            ("minutes", fields.minutes, fields.hours if fields.hours is not None else fields.days, 60),
            ("seconds", fields.seconds, fields.minutes, 60),
        )
        if field is not None and above is not None and field >= unit
    ]
    if not over:
        return None
    read = slurm_clock(fields.total_seconds)
    return Problem(
        key,
        f"{key}={value}: its {' and '.join(over)} are more than their unit holds, and SLURM adds the fields "
        f"up, so the limit is {read}: is it the one you meant?",
        fix=f"set {key}={read}, or the limit you meant",
        severity="warning",
    )


RULES = (time_limits_as_slurm_reads_them,)
