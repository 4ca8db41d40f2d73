"""The smallest parallel layout whose memory estimate fits, for the fix of a layout that does not.

A candidate must also pass every other per-scope rule (Megatron's divisibility, the batch over the
data-parallel ranks, the nodes' GPUs), so the proposed fix validates as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from launch.checks.context import Context, Scope
from launch.checks.rules.resources import candidate_layouts, training_gib

# True while rules run on a candidate: their fix texts are not read, so they skip their own searches.
_TRYING: ContextVar[bool] = ContextVar("_TRYING", default=False)


@contextmanager
def _trying() -> Iterator[None]:
    token = _TRYING.set(True)
    try:
        yield
    finally:
        _TRYING.reset(token)


def smallest_fitting_layout(scope: Scope, ctx: Context, tokens: int) -> dict[str, int]:
    """Changed hardware fields of the smallest fitting layout (fewest nodes, then least PP, TP, EP)."""
    from launch.checks.rules import SCOPE_RULES

    if _TRYING.get():
        return {}

    hw, arch = scope.hardware, ctx.run.model.architecture
    current = {
        f: getattr(hw, f) for f in ("nodes", "tensor_parallel", "pipeline_parallel", "expert_parallel")
    }
    best: tuple[int, int, int, int] | None = None
    chosen: dict[str, int] = {}
    for layout in candidate_layouts(hw, arch):
        if best is not None and layout["nodes"] > best[0]:
            break
        if hw.sequence_parallel and layout["tensor_parallel"] == 1:
            continue
        candidate = hw.model_copy(update=layout)
        if training_gib(arch, candidate, tokens) > (hw.gpu_memory_gib or 0):
            continue
        rank = (
            layout["nodes"],
            layout["pipeline_parallel"],
            layout["tensor_parallel"],
            layout["expert_parallel"],
        )
        if best is not None and rank >= best:
            continue
        trial = replace(scope, hardware=candidate)
        with _trying():
            if any(p.severity == "error" for rule in SCOPE_RULES for p in rule(trial, ctx)):
                continue
        best, chosen = rank, layout
    return {k: v for k, v in chosen.items() if current[k] != v}


def first_valid(scope: Scope, ctx: Context, section: str, field: str, options: list[int]) -> int | None:
    """Of `options` for one hardware or curriculum field (closest to the current value first), the first
    with which the scope passes every per-scope rule, so that the fix proposing it validates."""
    model = scope.hardware if section == "hardware" else scope.curriculum
    if model is None or not options:
        return None
    current = getattr(model, field)
    ordered = sorted(options, key=lambda v: (abs(v - current) if isinstance(current, int) else 0, -v))
    if _TRYING.get():
        return ordered[0]
    return next((v for v in ordered if passes(scope, ctx, section, field, v)), ordered[0])


def passes(scope: Scope, ctx: Context, section: str, field: str, value: int) -> bool:
    """True when the scope with one hardware or curriculum field changed breaks no per-scope rule."""
    from launch.checks.rules import SCOPE_RULES

    model = scope.hardware if section == "hardware" else scope.curriculum
    if model is None:
        return False
    if _TRYING.get():
        return True
    changed = model.model_copy(update={field: value})
    trial = replace(scope, **{"hardware" if section == "hardware" else "curriculum": changed})
    with _trying():
        return not any(p.severity == "error" for rule in SCOPE_RULES for p in rule(trial, ctx))
