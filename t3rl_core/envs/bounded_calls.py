"""Pure tool calls run where they can be stopped: worker processes the episode loop kills past a budget.

A tool whose cost the model controls (bfcl-eval's `power(10, 10**9)`) is one big-integer operation in
C: CPython holds the GIL for all of it, so neither a thread nor a Python-level time-out bounds it, and
on the loop's process it stalls every episode for minutes. A world declares which of its calls are
pure (their result depends on their arguments only) and a budget; such calls run in long-lived worker
processes (`t3rl_core/envs/call_worker.py`, started as subprocesses: no fork of the loop's threads),
and one past its budget (of the worker's CPU time) has its worker killed and gets None, which the
world turns into the call's error text. A worker's start-up (imports) is waited for apart from the budget.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import weakref
from collections.abc import Sequence
from typing import Any

from t3rl_core import outside_json
from t3rl_core.envs.call_worker import PARENT_ENV
from t3rl_core.secret_env import environment_for_untrusted

# A worker's imports on a busy machine: waited for apart from a call's budget.
_STARTUP_S = 300.0
# A call's budget is its worker's CPU time: how often that is read, and the wall time, in budgets, after
# which a worker that stopped using CPU is given up on all the same.
_CPU_POLL_S = 0.1
_WALL_PER_CPU_BUDGET = 20.0
_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
# How long a worker whose output closed is waited for to exit (it is exiting: milliseconds).
_EXIT_WAIT_S = 2.0


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system) process `pid` has used, from /proc (None where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime: fields 14 and 15 of stat


class WorkerLost(RuntimeError):
    """A worker exited during a call (its function raised, or it was killed from outside)."""


class CallKilled(WorkerLost):
    """A worker killed by a signal during a call (the kernel's OOM killer, a crash in C): what the call
    was asked to do killed it, not its function's own error, so the call's caller answers it as the
    call's error (as one past its budget), never the world's failure: the model's arguments would
    otherwise fail episodes toward rollout.max_failure_rate."""

    def __init__(self, number: int) -> None:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        super().__init__(f"its worker process was killed by {name} (out of memory, or a crash)")


class _Worker:
    def __init__(self, preload: Sequence[str]) -> None:
        env = {
            # A pure call's result depends on its arguments only: it needs no credential, and the
            # arguments are the model's (math-verify parses its answer, bfcl-eval's tools take its text).
            **environment_for_untrusted((), os.environ),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            PARENT_ENV: str(os.getpid()),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "t3rl_core.envs.call_worker", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self._out = self.process.stdout.fileno()
        os.set_blocking(self._out, False)
        self._buffer = b""

    async def line(self, timeout: float, cpu: bool = False) -> bytes | None:
        """The worker's next output line; None past `timeout` seconds (with `cpu`, of the worker's CPU
        time, or past _WALL_PER_CPU_BUDGET times that of wall time; of wall time where there is no
        /proc). Read without blocking the loop."""
        loop = asyncio.get_running_loop()
        start = cpu_seconds(self.process.pid) if cpu else None
        wall = timeout * _WALL_PER_CPU_BUDGET if start is not None else timeout
        deadline = loop.time() + wall
        while b"\n" not in self._buffer:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._out, _set_done, readable)
            try:
                left = max(deadline - loop.time(), 0.0)
                await asyncio.wait_for(readable, left if start is None else min(left, _CPU_POLL_S))
            except TimeoutError:
                if start is None or loop.time() >= deadline:
                    return None
                used = cpu_seconds(self.process.pid)
                if used is not None and used - start > timeout:
                    return None
                continue
            finally:
                loop.remove_reader(self._out)
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                raise WorkerLost("the call's worker process exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def send(self, fn: str, args: Sequence[Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps([fn, list(args)]) + "\n").encode())
        self.process.stdin.flush()

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def _exit_status(process: subprocess.Popen[bytes]) -> int | None:
    """The exit status of a worker whose output closed, waited for briefly (None if it lives on)."""
    try:
        return process.wait(timeout=_EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        return None


def _retrieved(task: asyncio.Future[_Worker]) -> None:
    if not task.cancelled():
        task.exception()


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class CallWorkers:
    """Up to `size` worker processes, started on demand and shared by the episodes of a run."""

    def __init__(self, preload: Sequence[str], size: int = 2) -> None:
        self.preload, self.size = tuple(preload), size
        self._idle: list[_Worker] = []
        # A worker started before any call asked for one (`start_ahead`), and its wait for `ready`.
        self._ahead: tuple[_Worker, asyncio.Task[_Worker]] | None = None
        # Per event loop (a semaphore belongs to one): how many calls may hold a worker at once.
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    async def run(self, fn: str, args: Sequence[Any], budget_s: float) -> str | None:
        """`fn(*args)`'s text, run in a worker; None when it ran past `budget_s` of its worker's CPU time
        (the worker killed): a loaded machine, the worker waiting for a core, does not decide whether a
        call finishes. `args` must survive a JSON round trip unchanged (the caller checks)."""
        loop = asyncio.get_running_loop()
        slots = self._slots.setdefault(loop, asyncio.Semaphore(self.size))
        async with slots:
            worker = await self._take(loop)
            try:
                worker.send(fn, args)
                line = await worker.line(budget_s, cpu=True)
            except WorkerLost:
                # Its output closed: the worker has ended or is ending. A signal ended it, or its
                # function raised (a bug of the world's call function: exit status 1).
                code = _exit_status(worker.process)
                worker.kill()
                if code is not None and code < 0:
                    raise CallKilled(-code) from None
                raise
            except BaseException:
                worker.kill()
                raise
            if line is None:
                worker.kill()
                return None
            self._idle.append(worker)
            text: str = outside_json.loads(line, "a call worker's answer")
            return text

    def start_ahead(self) -> None:
        """Start one worker now, for the first call to take, unless one is idle or starting already.
        A worker's imports took 0.2-0.8 s (bfcl-eval's API modules), which the first call waited for
        while its episode held an eval slot. Called on the event loop that will make the calls."""
        if self._idle or self._ahead is not None:
            return
        worker = _Worker(self.preload)
        self._ahead = (worker, asyncio.ensure_future(self._ready(worker)))

    async def _take(self, loop: asyncio.AbstractEventLoop) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            # The kernel ends a worker when the thread that started it exits (PR_SET_PDEATHSIG reads
            # the thread as the parent): an event loop's thread gone, its idle workers are replaced.
            if worker.process.poll() is None:
                return worker
            worker.kill()
        if self._ahead is not None and self._ahead[1].get_loop() is loop:
            _, started = self._ahead
            self._ahead = None
            return await started
        return await self._ready(_Worker(self.preload))

    async def _ready(self, worker: _Worker) -> _Worker:
        try:
            ready = await worker.line(_STARTUP_S)
        except BaseException:
            worker.kill()
            raise
        if ready != b"ready":
            worker.kill()
            raise WorkerLost(f"a tool-call worker did not start within {_STARTUP_S:.0f} s")
        return worker

    def close(self) -> None:
        if self._ahead is not None:
            worker, started = self._ahead
            self._ahead = None
            # Retrieved once it ends: a worker that never got ready is reported by no one, and Python
            # 3.11's wait_for may swallow the cancel when the worker's pipe turns readable as it is
            # killed (its read then fails on the closed pipe).
            started.add_done_callback(_retrieved)
            started.cancel()
            self._idle.append(worker)  # killed below, whether it got ready or not
        # Every worker is signalled before any is waited for: their exits overlap (two workers after an
        # eval's last episode: ~12 ms, where one after the other took 12-50 ms on the shared machine).
        for worker in self._idle:
            worker.process.kill()
        while self._idle:
            self._idle.pop().kill()
