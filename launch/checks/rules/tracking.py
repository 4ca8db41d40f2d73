"""A tracking backend's naming rules (declared in launch.config.trackers) hold for the names the config
gives it, so a run does not fail at the tracker's start after its data and conversion stages."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.fixes import quoted
from launch.config.trackers import TRACKER_NAMES


def tracker_names_accepted(ctx: Context) -> Iterator[Problem]:
    """Each name the tracker receives passes the tracker's own rule for it."""
    tracking = ctx.run.tracking
    for field, rule in TRACKER_NAMES.get(tracking.kind, {}).items():
        name = getattr(tracking, field)
        why = rule.refuses(name) if isinstance(name, str) else None
        if why is not None:
            key = f"tracking.{field}"
            yield Problem(
                key,
                f"{tracking.kind} {field} '{name}' {why} ({tracking.kind} refuses it when the run starts)",
                fix=f"set {key}={quoted(rule.cleaned(name))}",
            )


RULES = (tracker_names_accepted,)
