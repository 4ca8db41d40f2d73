"""A root hardware key typed on the command line that every train stage sets again in its own overlay, and
that no other stage reads: `hardware.context_parallel=2` on stage2_bfcl, whose only train stage runs
`hardware: {context_parallel: 4}`, was accepted without a word and trained with CP 4.

Which stages read a root field is not listed anywhere: the plan is built with the root hardware section
behind a recorder of the fields read from it (a train stage with an overlay reads its merged copy, not the
root; a whole dump counts as no field read, as a manifest's does). A field read that way, or a train stage
that does not set it, is a reader; with none, the typed value does nothing (a warning, as for the root eval
section's keys that every eval stage replaces: launch/checks/rules/unread.py).
"""

from __future__ import annotations

from typing import Any

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.fixes import typed_text, value_at
from launch.config.schema import HardwareConfig


class _Recorder:
    """A HardwareConfig whose field reads are recorded (in `read`)."""

    def __init__(self, hardware: HardwareConfig) -> None:
        self._hardware = hardware
        self.read: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        if name in HardwareConfig.model_fields:
            self.read.add(name)
        return getattr(self._hardware, name)


def _read_from_root(ctx: Context) -> set[str] | None:
    """The root hardware fields the plan's stages read as the root's; None when the plan is not built."""
    recorder = _Recorder(ctx.run.hardware)
    built = ctx.builds is not None and ctx.builds(ctx.run.model_copy(update={"hardware": recorder}))
    return recorder.read if built else None


def replaced_root_fields(ctx: Context) -> set[str]:
    """The root hardware fields (`hardware.<field>`) every train stage sets in its own overlay and no stage
    reads from the root: what the run never uses of the root section (also the keys a sweep's points may
    differ in and be one run: launch.run.sweep_checks)."""
    trained = [s for s in ctx.scopes if s.stage is not None]
    if not trained:
        return set()
    candidates = set.intersection(*(set(s.overridden) for s in trained))
    read = _read_from_root(ctx) if candidates else None
    return set() if read is None else {f"hardware.{field}" for field in candidates - read}


def root_hardware_replaced(ctx: Context, key: str, source: str) -> list[Problem]:
    """A warning for `hardware.<field>…` set by `source` (an override) that every train stage sets in its own
    overlay and no stage reads from the root."""
    field = key.removeprefix("hardware.").split(".")[0]
    trained = [s for s in ctx.scopes if s.stage is not None]
    if f"hardware.{field}" not in replaced_root_fields(ctx):
        return []
    typed = value_at(ctx.data, key)
    theirs = ", ".join(
        f"stages.{s.stage}.{key}={typed_text(value_at(ctx.data, f'stages.{s.stage}.{key}'))}" for s in trained
    )
    moved = " ".join(f"stages.{s.stage}.{key}={typed_text(typed)}" for s in trained)
    return [
        Problem(
            key,
            f"{key} is set to {typed_text(typed)}, but every train stage sets its own ({theirs}) and no "
            "other stage reads it: the run never uses it",
            fix=f"set {moved} instead of `{source.removeprefix('override `').removesuffix('`')}`",
            severity="warning",
        )
    ]
