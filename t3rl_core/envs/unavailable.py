"""The one kind of error a world raises when it cannot be built here: its environment does not load, or
its server does not start or is no server of its kind. `t3rl eval` reports it as a failed eval, naming
the cause (never "a bug in t3rl", never a score of zero); its message names what to fix."""

from __future__ import annotations


class WorldUnavailable(RuntimeError):
    """The world of env.* cannot be built: the message says why and what to change."""
