"""A model swap a fix proposes when no candidate fits the hardware as it is set.

A rule that proposes another model (slime's SFT knows two chat families) tries each candidate against every
scope's layout, and then with the layout values the layout's rules propose (`launch.checks.model_layouts`).
When neither fits (`hardware.gpus_per_node=7`: no batch of 64 splits over 7 ranks, whatever the model;
`hardware.gpu_memory_gib=4`: no candidate's training fits), the first candidate was proposed alone, a fix
refused when applied. Here the hardware group's options are tried in turn: the one chosen first (the
hardware key typed undone), then the smallest (fewest GPUs, then least memory). The first with which a
candidate fits every scope is the smallest hardware change that would, proposed with the candidate in
place of every hardware key typed (`instead of `a` and `b``: the option supersedes them all); None when
no option holds one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launch.checks.context import Context, Scope
from launch.config.schema import HardwareConfig


def swap_on_other_hardware(ctx: Context, names: list[str], holds: Any) -> str | None:
    """`model=<name> hardware=<option>` (and the hardware keys typed replaced), the first candidate of
    `names` that every scope `holds` (a `(scope, ctx) -> bool`) on the smallest hardware option; None."""
    from launch.checks.rules.model_inputs import model_trials  # lazy: only a swap no layout holds

    typed = _typed_hardware(ctx)
    for option, hardware, written in _hardware_options(ctx):
        on_it = ctx._replace(scopes=tuple(_on(scope, hardware) for scope in ctx.scopes))
        on_it = on_it._replace(run=ctx.run.model_copy(update={"hardware": hardware}))
        for name, trial in model_trials(on_it, names):
            if all(holds(scope, trial) for scope in trial.scopes):
                # the overrides of keys the option's file writes are superseded by it: all of them
                # replaced; one of a key it leaves (a job variable added) is kept
                superseded = [t for t, key in typed if key in written]
                instead = f" instead of {' and '.join(f'`{t}`' for t in superseded)}" if superseded else ""
                return f"model={name} hardware={option}{instead}"
    return None


def _typed_hardware(ctx: Context) -> list[tuple[str, str]]:
    """The command line's overrides of root hardware keys, each with its key under `hardware` (a choice
    replaces the section below them)."""
    typed = {
        origin.source.removeprefix("override `").removesuffix("`")
        for key, origin in ctx.provenance.items()
        if key.startswith("hardware.") and origin.source.startswith("override `")
    }
    # the override's own key: `+hardware.env_vars.X=1` creates env_vars too, which is not what it sets
    return sorted((t, t.partition("=")[0].lstrip("+~").removeprefix("hardware.")) for t in typed)


def _written(data: Any, prefix: str = "") -> Iterator[str]:
    """Every dotted key an option's file writes."""
    for key, value in data.items() if isinstance(data, dict) else ():
        yield f"{prefix}{key}"
        yield from _written(value, f"{prefix}{key}.")


def _hardware_options(ctx: Context) -> Iterator[tuple[str, HardwareConfig, frozenset[str]]]:
    """The hardware group's options that validate, each with the keys its file writes: the one chosen
    first (the hardware keys typed dropped is the smallest change), then fewest GPUs, then least memory
    per GPU."""
    from launch.config.search_path import PACKAGE, package_dir  # lazy: only a swap no layout holds
    from t3rl_core.yaml_text import safe_load  # lazy: only a swap no layout holds

    found: dict[str, tuple[HardwareConfig, frozenset[str]]] = {}
    # t3rl's own configs by their installed package (`conf` imports only with the checkout on sys.path).
    for directory in [*ctx.config_dirs, *map(str, filter(None, [package_dir(PACKAGE)]))]:
        for file in sorted(Path(directory).expanduser().glob("hardware/*.yaml")):
            if file.stem in found:
                continue  # the config dirs' option of that name is the one Hydra reads
            try:
                data = safe_load(file.read_text(encoding="utf-8"))
                found[file.stem] = (HardwareConfig.model_validate(data), frozenset(_written(data)))
            except (OSError, ValueError, ValidationError):
                continue  # not an option that composes: not one to propose
    chosen = ctx.run.hardware.name
    for option, (hardware, written) in sorted(
        found.items(),
        key=lambda item: (item[0] != chosen, item[1][0].world_size, item[1][0].gpu_memory_gib or 0),
    ):
        yield option, hardware, written


def _on(scope: Scope, hardware: HardwareConfig) -> Scope:
    """`scope` on `hardware`, the fields its stage sets itself kept."""
    own = {
        field: getattr(scope.hardware, field)
        for field in scope.overridden
        if field in HardwareConfig.model_fields
    }
    return scope._replace(hardware=hardware.model_copy(update=own))
