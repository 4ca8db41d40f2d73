"""Where the processes of a stage tell the launcher which secret values they revealed.

A `Secret` revealed in a stage's process (a plugin's credential, the eval's server key) may have any
name, so the launcher cannot know it by name; that process sends the value here before `reveal()`
returns (t3rl_core.secret, `T3RL_SECRET_SINK`), and the launcher drains the socket before it masks
each line of the stage's output: a value announced before it was printed is always masked.

The socket is a unix datagram socket in a fresh directory only this user can enter; it lives as long
as the stage.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile

from launch.config.secrets import remember
from t3rl_core.secret import SINK_ENV

# sockaddr_un holds 108 bytes; a longer temporary directory falls back to /tmp.
_MAX_SOCKET_PATH = 100


class SecretSink:
    """Open on creation; `close()` removes it."""

    def __init__(self) -> None:
        base = tempfile.gettempdir()
        if len(base) > _MAX_SOCKET_PATH - 32:
            base = "/tmp"
        self._dir = tempfile.mkdtemp(prefix="t3rl-secrets-", dir=base)
        self.path = os.path.join(self._dir, "sink")
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._socket.bind(self.path)
        self._socket.setblocking(False)

    def env(self) -> dict[str, str]:
        """What a stage's environment gets so that its processes find the sink."""
        return {SINK_ENV: self.path}

    def drain(self) -> None:
        """Remember every value announced so far (masked by every later scrub of this process)."""
        while True:
            try:
                data = self._socket.recv(1 << 20)
            except (BlockingIOError, OSError):
                return
            remember([data.decode("utf-8", errors="replace")])

    def close(self) -> None:
        self.drain()
        with contextlib.suppress(OSError):
            self._socket.close()
        shutil.rmtree(self._dir, ignore_errors=True)
