"""t3rl's side of one cell: its four pipes, the source fed in, output read with a cap, the verdict.

The zygote gets the far ends (source/lifeline, stdout, stderr, status); t3rl keeps the near ones.
Closing the lifeline's write end is how t3rl kills a cell: its init sees the hang-up and exits, and
the kernel takes down everything in the cell's PID namespace with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import time
from collections.abc import Callable
from typing import Any

from t3rl_core import outside_json
from t3rl_core.sandbox.zygote_process import Zygote

_READ_CHUNK = 1 << 16
_STATUS_CAP = 1 << 16
_F_SETPIPE_SZ = 1031
# After the cell's init exits, how long stray holders of its output pipes may keep them open.
DRAIN_GRACE_S = 1.0


class CellRun:
    """One cell in flight. Drive it with `wait_async` (the sandbox) or `wait_blocking` (the probe)."""

    def __init__(self, zygote: Zygote, code: str, cap: int) -> None:
        self.cap = cap
        self.buffers: dict[int, bytearray] = {}
        self.overflowed = False
        self._remove_writer: Callable[[], None] | None = None
        lifeline_r, self.lifeline = os.pipe()
        self.stdout, out_w = os.pipe()
        self.stderr, err_w = os.pipe()
        self.status, status_w = os.pipe()
        theirs = [lifeline_r, out_w, err_w, status_w]
        try:
            self.open = {self.stdout, self.stderr, self.status}
            for fd in self.open:
                os.set_blocking(fd, False)
                self.buffers[fd] = bytearray()
            self._pending = self._framed(code.encode("utf-8", errors="surrogatepass"))
            zygote.send({}, theirs)
            self._feed()
        except BaseException:
            self.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)

    @staticmethod
    def _framed(source: bytes) -> bytes:
        return len(source).to_bytes(8, "little") + source

    def _feed(self) -> None:
        """Write as much of the source as the pipe takes now (grown to the system maximum first)."""
        if not self._pending or self.lifeline < 0:
            return
        if len(self._pending) > 1 << 16:
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.lifeline, _F_SETPIPE_SZ, len(self._pending))
        os.set_blocking(self.lifeline, False)
        with contextlib.suppress(BlockingIOError, BrokenPipeError):
            written = os.write(self.lifeline, self._pending)
            self._pending = self._pending[written:]

    def on_readable(self, fd: int) -> None:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.open.discard(fd)
            return
        into = self.buffers[fd]
        cap = _STATUS_CAP if fd == self.status else self.cap
        room = cap - len(into)
        into += chunk[:room]
        if len(chunk) > room and fd != self.status:
            self.overflowed = True
            self.kill()

    def kill(self) -> None:
        """Drop the lifeline: the cell's init exits and its PID namespace goes with it."""
        if self._remove_writer is not None:
            self._remove_writer()
        if self.lifeline >= 0:
            os.close(self.lifeline)
            self.lifeline = -1

    async def wait_async(self, timeout_s: float) -> bool:
        """Until every pipe is at end-of-file; False if the wall clock ran out first (the cell is killed)."""
        loop = asyncio.get_running_loop()
        all_closed = loop.create_future()
        status_closed = loop.create_future()

        def readable(fd: int) -> None:
            self.on_readable(fd)
            if fd not in self.open:
                loop.remove_reader(fd)
                if fd == self.status and not status_closed.done():
                    status_closed.set_result(None)
                if not self.open and not all_closed.done():
                    all_closed.set_result(None)

        def writable() -> None:
            self._feed()
            if not self._pending:
                stop_writing()

        def stop_writing() -> None:
            loop.remove_writer(writer_fd)
            self._remove_writer = None

        for fd in list(self.open):
            loop.add_reader(fd, readable, fd)
        writer_fd = self.lifeline
        if self._pending:
            loop.add_writer(writer_fd, writable)
            self._remove_writer = stop_writing
        in_time = True
        try:
            try:
                await asyncio.wait_for(asyncio.shield(status_closed), timeout_s)
            except TimeoutError:
                in_time = False
                self.kill()
            # The cell's init is gone; output pipes close once its PID namespace is torn down.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(all_closed), DRAIN_GRACE_S)
        finally:
            for fd in list(self.open):
                loop.remove_reader(fd)
            if self._remove_writer is not None:
                self._remove_writer()
        return in_time

    def wait_blocking(self, timeout_s: float) -> bool:
        """`wait_async` without an event loop (the start-up probe runs before any loop exists)."""
        deadline = time.monotonic() + timeout_s
        poll = select.poll()
        for fd in self.open:
            poll.register(fd, select.POLLIN)
        while self.open:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return False
            self._feed()
            for fd, _ in poll.poll(left * 1000):
                self.on_readable(fd)
                if fd not in self.open:
                    poll.unregister(fd)
        return True

    def statuses(self) -> list[dict[str, Any]]:
        messages = []
        for line in bytes(self.buffers[self.status]).splitlines():
            with contextlib.suppress(ValueError):
                messages.append(outside_json.loads(line, "a cell's status"))
        return messages

    def close(self) -> None:
        self.kill()
        for fd in (self.stdout, self.stderr, self.status):
            with contextlib.suppress(OSError):
                os.close(fd)
