"""A tool-call worker ends with the process that started it, even when that process is SIGKILLed while
the worker runs a call the model made costly (no `finally`, no close runs then)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

# One factorial of a billion: minutes of one C call holding the GIL, as bfcl-eval's power(10, 10**9).
_PARENT = """
import asyncio
from t3rl_core.envs.bounded_calls import CallWorkers

asyncio.run(CallWorkers(["math"], size=1).run("math:factorial", [10**9], budget_s=3600))
"""
_DEADLINE_S = 120.0


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()  # after the command's name, which may hold spaces


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def _cpu_s(pid: int) -> float:
    fields = _stat(pid)
    return 0.0 if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _poll(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + _DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"not within {_DEADLINE_S:.0f} s: {what}"
        time.sleep(0.05)


def test_a_worker_in_a_long_call_dies_with_its_sigkilled_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT])
    workers: list[int] = []
    try:
        _poll(lambda: bool(workers.extend(_children(parent.pid)) or workers), "the worker started")
        worker = workers[0]
        # A second of CPU is past the worker's imports (~0.1 s): it is inside the call.
        _poll(lambda: _cpu_s(worker) > 1.0, "the worker entered the call")
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        _poll(lambda: not _alive(worker), "the worker ended with its parent")
    finally:
        parent.kill()
        parent.wait()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
