"""t3rl's handle on the zygote (`child/zygote.py`): start it, hand it cells, restart it if it dies."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

from t3rl_core import outside_json

CHILD_PACKAGE_PARENT = Path(__file__).parent
# The zygote imports the stdlib-only `child` package by path (the sandbox interpreter may not have
# t3rl installed) and takes that path back out of sys.path before any cell runs.
BOOTSTRAP = (
    f"import sys; sys.path.insert(0, {str(CHILD_PACKAGE_PARENT)!r}); "
    "from child.zygote import main; del sys.path[0]; main()"
)
_START_TIMEOUT_S = 60.0
_SEND_TIMEOUT_S = 10.0


class ZygoteError(RuntimeError):
    """The zygote could not be started or reached."""


class Zygote:
    """One zygote process and its control socket. `cell_spec` is what the zygote set up and will apply.

    With `cgroups` (a directory per hierarchy), the zygote joins them before anything else and every
    cell it forks is born there: moving a process into a cgroup waits for an RCU grace period (~10 ms),
    forking into one does not.
    """

    def __init__(
        self, python: str, spec: dict[str, Any], env: dict[str, str], cgroups: list[Path] | None = None
    ) -> None:
        self.python, self.spec, self.env, self.cgroups = python, spec, env, cgroups or []
        self._lock = threading.Lock()
        self.proc, self.sock, self.cell_spec = self._start()

    def _start(self) -> tuple[subprocess.Popen[bytes], socket.socket, dict[str, Any]]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        procs: list[int] = []
        try:
            for cgroup in self.cgroups:
                procs.append(os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
            passed = [theirs.fileno(), *procs]
            spec = json.dumps({**self.spec, "cgroup_fds": procs}).encode()
            try:
                proc = subprocess.Popen(
                    [self.python, "-I", "-B", "-X", "utf8", "-c", BOOTSTRAP, str(theirs.fileno())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    env=self.env,
                    cwd="/",
                    pass_fds=passed,
                    start_new_session=True,
                )
            except OSError as err:
                raise ZygoteError(f"cannot start {self.python}: {err}") from err
        finally:
            theirs.close()
            for fd in procs:
                os.close(fd)
        ours.settimeout(_START_TIMEOUT_S)
        try:
            ours.send(spec)
            hello = ours.recv(1 << 16)
        except OSError:
            hello = b""
        reply: dict[str, Any] = outside_json.loads(hello, "the zygote's hello") if hello else {}
        if "error" in reply or not reply:
            proc.kill()
            _, err = proc.communicate()
            ours.close()
            why = (
                reply.get("error") or f"it exited ({proc.returncode}): {err.decode(errors='replace')[-2000:]}"
            )
            raise ZygoteError(f"the sandbox zygote under {self.python} did not start: {why}")
        assert proc.stderr is not None
        proc.stderr.close()  # nothing reads it from here on; a crash shows as a dead zygote
        ours.settimeout(_SEND_TIMEOUT_S)
        return proc, ours, reply

    def send(self, request: dict[str, Any], fds: list[int]) -> None:
        """Hand one cell to the zygote; restarts a dead zygote once (same spec) and tries again."""
        message = json.dumps(request).encode()
        with self._lock:
            try:
                socket.send_fds(self.sock, [message], fds)
                return
            except OSError:
                self._stop()
                self.proc, self.sock, restarted = self._start()
            if restarted != self.cell_spec:
                raise ZygoteError("the restarted sandbox zygote has different protections")
            socket.send_fds(self.sock, [message], fds)

    def _stop(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        """The zygote exits when its control socket closes; cells still running keep their lifelines."""
        with self._lock:
            if self.proc.returncode is None:
                self._stop()
