"""Trying a changed layout against every per-scope rule, so that a proposed fix validates as it is.

A candidate must pass every per-scope check (Megatron's divisibility, the batch over the data-parallel
ranks, the nodes' GPUs): `Context.scope_checks`, which the validator fills from the rules package, so
this module imports no rule. While a candidate is tried, rules skip their own fix searches.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from launch.checks.context import Context, Scope

# True while rules run on a candidate: their fix texts are not read, so they skip their own searches.
TRYING: ContextVar[bool] = ContextVar("TRYING", default=False)


@contextmanager
def trying() -> Iterator[None]:
    token = TRYING.set(True)
    try:
        yield
    finally:
        TRYING.reset(token)


def first_valid(scope: Scope, ctx: Context, section: str, field: str, options: list[int]) -> int | None:
    """Of `options` for one hardware or curriculum field (closest to the current value first), the first
    with which the scope passes every per-scope rule, so that the fix proposing it validates."""
    model = scope.hardware if section == "hardware" else scope.curriculum
    if model is None or not options:
        return None
    current = getattr(model, field)
    ordered = sorted(options, key=lambda v: (abs(v - current) if isinstance(current, int) else 0, -v))
    if TRYING.get():
        return ordered[0]
    return next((v for v in ordered if passes(scope, ctx, section, field, v)), ordered[0])


def passes(scope: Scope, ctx: Context, section: str, field: str, value: int) -> bool:
    """True when the scope with one hardware or curriculum field changed breaks no per-scope rule."""
    model = scope.hardware if section == "hardware" else scope.curriculum
    if model is None:
        return False
    if TRYING.get():
        return True
    changed = model.model_copy(update={field: value})
    return scope_valid(
        scope._replace(**{"hardware" if section == "hardware" else "curriculum": changed}), ctx
    )


def scope_valid(trial: Scope, ctx: Context) -> bool:
    """True when a candidate scope breaks no per-scope rule (rules skip their own fix searches)."""
    with trying():
        return not any(p.severity == "error" for rule in ctx.scope_checks for p in rule(trial, ctx))
