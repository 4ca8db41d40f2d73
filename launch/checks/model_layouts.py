"""A fix that swaps the model in, with the layout the model needs.

A rule that proposes another model (slime's SFT knows two chat families: `model=glm4_9b` under retool gets
`model=qwen2_5_3b_instruct`) tries each candidate against every scope's layout first
(`model_inputs.fitting_model`). When none fits the layout typed (`hardware.pipeline_parallel=5`: no option
of those families has layers five stages divide), the first candidate was proposed anyway, refused when
applied at the pipeline, and the next fix undid the choice that had led there. The fix is now two groups at
once: the candidate with the hardware values the layout's own rules propose for it, applied and tried
again, scope by scope, until each scope passes (`model=qwen2_5_3b_instruct hardware.pipeline_parallel=4`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from launch.checks.context import Context, Scope
from launch.checks.rules.layouts import scope_valid, trying
from launch.checks.rules.model_inputs import model_trials

# "set a=1 b=2 (…": the assignments of a fix's first alternative.
_FIRST = re.compile(r"^set ((?:[\w.]+=\S+ ?)+)")
# Each layout rule's fix is applied at most this often per scope: a layout that needs more is no fix.
_STEPS = 4


def fitting_swap(ctx: Context, names: list[str]) -> str | None:
    """`model=<name>`, the first of `names` whose architecture every scope's layout takes; else the first
    with the hardware values the layout's rules propose for it (`model=<name> hardware.k=v …`); None when
    none fits either way."""
    # Built once for both passes: each trial is two model copies of the run config.
    trials = list(model_trials(ctx, names))
    for name, trial in trials:
        if all(holds(scope, trial) for scope in ctx.scopes):
            return f"model={name}"
    for name, trial in trials:
        changes: dict[str, str] = {}
        if all(_fitted(scope, trial, changes) for scope in ctx.scopes):
            return " ".join([f"model={name}", *(f"{k}={v}" for k, v in changes.items())])
    from launch.checks.swap_hardware import swap_on_other_hardware  # lazy: only a swap no layout holds

    return swap_on_other_hardware(ctx, names, holds)


def holds(scope: Scope, ctx: Context) -> bool:
    """The scope passes its layout's rules and its GPUs hold the model: training and the SGLang engines'
    weights (a candidate the layout takes but no GPU of it holds is no swap: `gpu_memory_gib=4`)."""
    from launch.checks.rules.resources import engine_weights_fit, training_fits_gpu_memory  # lazy: a swap

    if not scope_valid(scope, ctx):
        return False
    with trying():
        fits = (training_fits_gpu_memory.check, engine_weights_fit.check)  # type: ignore[attr-defined]
        return not any(p.severity == "error" for rule in fits for p in rule(scope, ctx))


def _fitted(scope: Scope, ctx: Context, changes: dict[str, str]) -> bool:
    """Whether `scope` passes its layout's rules once their own fixes are applied (recorded in `changes`,
    as override text); `scope_valid` judges each step as a proposed layout value is judged."""
    for _ in range(_STEPS):
        if holds(scope, ctx):
            return True
        errors = [p for rule in ctx.scope_checks for p in rule(scope, ctx) if p.severity == "error"]
        first = _FIRST.match(errors[0].fix) if errors else None
        if first is None:
            return False
        hardware = scope.hardware
        for assignment in first[1].split():
            key, _, value = assignment.partition("=")
            field = key.removeprefix(f"stages.{scope.stage}.").removeprefix("hardware.")
            if not key.endswith(f"hardware.{field}") or not value.isdigit():
                return False  # a fix of another kind (a batch size, the executor): not a layout's
            hardware, changes[key] = _with(hardware, field.split("."), int(value)), value
        scope = scope._replace(hardware=hardware)
    return holds(scope, ctx)


def _with(section: BaseModel, path: list[str], value: int) -> BaseModel:
    """`section` with the field at `path` (`recompute.num_layers`: a field of a section inside) set."""
    head, *rest = path
    inner = _with(getattr(section, head), rest, value) if rest else value
    return section.model_copy(update={head: inner})
