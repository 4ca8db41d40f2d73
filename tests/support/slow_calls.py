"""Calls for a tool-call worker (`t3rl_core.envs.bounded_calls`) whose cost in wall and CPU time a test
chooses: a worker that sleeps uses wall time but no CPU, as one waiting for a core on a loaded machine."""

from __future__ import annotations

import time


def sleeping(seconds: float) -> str:
    """Answers after `seconds` of wall time, using no CPU."""
    time.sleep(seconds)
    return "slept"


def spinning(seconds: float) -> str:
    """Answers after `seconds` of its own CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return "spun"
