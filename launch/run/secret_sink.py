"""Where the processes of a stage tell the launcher which secret values they revealed.

A `Secret` revealed in a stage's process (a plugin's credential, the eval's server key) may have any
name, so the launcher cannot know it by name; that process sends the value here before `reveal()`
returns (t3rl_core.secret, `T3RL_SECRET_SINK`), and the launcher drains the socket before it masks
each line of the stage's output: a value announced before it was printed is always masked.

The socket is a unix datagram socket in a fresh directory only this user can enter; it lives as long
as the stage. A launcher killed outright (SIGKILL, the OOM killer) cannot remove its own, so each new
sink removes this user's sinks whose socket nobody holds any more.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
import time

from launch.config.secrets import remember
from t3rl_core.secret import SINK_ENV

# sockaddr_un holds 108 bytes; a longer temporary directory falls back to /tmp.
_MAX_SOCKET_PATH = 100
_PREFIX = "t3rl-secrets-"
# A sink's directory exists before its socket is bound: one without a socket is left alone this long.
_OPENING_S = 60.0


class SecretSink:
    """Open on creation; `close()` removes it."""

    def __init__(self) -> None:
        base = tempfile.gettempdir()
        if len(base) > _MAX_SOCKET_PATH - 32:
            base = "/tmp"
        _remove_orphans(base)
        self._dir = tempfile.mkdtemp(prefix=_PREFIX, dir=base)
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


def _remove_orphans(base: str) -> None:
    """Remove this user's sink directories in `base` whose socket nobody holds any more."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            if entry.name.startswith(_PREFIX) and _orphaned(entry):
                shutil.rmtree(entry.path, ignore_errors=True)


def _orphaned(entry: os.DirEntry[str]) -> bool:
    """Its socket refuses a connection (no process bound to it: its launcher is gone, whichever PID
    namespace it ran in), or it never got one and is older than a sink takes to open."""
    try:
        if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
            return False
        path = os.path.join(entry.path, "sink")
        if not os.path.exists(path):
            return time.time() - entry.stat(follow_symlinks=False).st_mtime > _OPENING_S
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
            probe.connect(path)  # sends nothing: a datagram socket only checks that someone is bound
    except ConnectionRefusedError:
        return True
    except OSError:
        return False
    return False
