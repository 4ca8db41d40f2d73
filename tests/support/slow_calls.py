"""Calls for a tool-call worker (`t3rl_core.envs.bounded_calls`) whose cost in wall and CPU time a test
chooses (a worker that sleeps uses wall time but no CPU, as one waiting for a core on a loaded machine),
or that end their worker."""

from __future__ import annotations

import os
import signal
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


def killed() -> str:
    """Killed by a signal mid-call, as the kernel's OOM killer kills a worker."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


def raising() -> str:
    """Raises: a bug of the call's function, which its worker answers by exiting."""
    raise RuntimeError("a bug")
