"""An SGLang server for the eval stage: started on a checkpoint, ready at /health, always stopped.

The server runs in its own process group (SGLang forks scheduler and detokenizer processes), so
stopping it signals the whole group. While it runs, SIGTERM to the eval process is turned into a
normal exit so that the server is stopped even when a pipeline executor terminates the stage.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from t3rl_core.eval.config import ServerConfig
from t3rl_core.parsers.own import OWN_TOOL_CALL_PARSERS
from t3rl_core.secret import Secret, log_tail
from t3rl_core.secret_launch import argv_for

SGLANG_LAUNCH = (sys.executable, "-m", "sglang.launch_server")
# t3rl_core/lifetime.py, by path rather than imported: a plan/validate imports this module, and the
# lifetime module's ctypes costs a cold start ~7 M instructions for a file only its child runs.
LIFETIME = str(Path(__file__).parent.parent / "lifetime.py")
# The server's output, in the eval's output dir.
SERVER_LOG = "server.log"


class ServerStartError(RuntimeError):
    """The server exited or did not answer /health in time."""


def launch_argv(
    model_path: str | Path,
    *,
    tp: int,
    tool_call_parser: str,
    reasoning_parser: str | None,
    config: ServerConfig,
    launch: Sequence[str] = SGLANG_LAUNCH,
) -> list[str]:
    """The `python -m sglang.launch_server …` argv of a checkpoint (what the eval stage's plan shows)."""
    argv = [*launch, "--model-path", str(model_path), "--tp", str(tp)]
    # t3rl reads the text of /generate itself; SGLang's server would refuse a name only t3rl registers.
    if tool_call_parser not in OWN_TOOL_CALL_PARSERS:
        argv += ["--tool-call-parser", tool_call_parser]
    if reasoning_parser:
        argv += ["--reasoning-parser", reasoning_parser]
    return [*argv, "--host", config.host, "--port", str(config.port), *config.extra_args]


def wait_for_server(
    url: str, timeout_s: float, pid: int | None = None, api_key: Secret | None = None
) -> None:
    """Until `url` answers /health (sent the server's key, if any, as a Bearer token); ServerStartError
    when process `pid` ends first or time runs out."""
    headers = _auth_headers(api_key)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _healthy(url, headers):
            return
        if pid is not None and not _alive(pid):
            raise ServerStartError(f"the server (pid {pid}) exited before {url}/health answered")
        time.sleep(0.5)
    raise ServerStartError(f"server not healthy at {url}/health after {timeout_s:.0f} s")


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie, i.e. exited but not yet reaped by its shell, counts as ended)."""
    return _runs(os.kill, pid, lambda fields: fields is None or fields[0] != "Z", [str(pid)])


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (a zombie, ended but not reaped, does not)."""

    def member(fields: list[str] | None) -> bool:
        return fields is not None and fields[2] == str(pgid) and fields[0] != "Z"

    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:  # no /proc: killpg finds a member, zombie or not
        return _runs(os.killpg, pgid, lambda fields: True, [])
    return _runs(os.killpg, pgid, member, entries)


def _runs(
    probe: Callable[[int, int], None],
    target: int,
    running: Callable[[list[str] | None], bool],
    pids: list[str],
) -> bool:
    """Signal 0 to `target` (ProcessLookupError: nothing runs), then whether `running` holds of any of
    `pids`' /proc stat fields after the command (state, ppid, pgrp, ...; None when unreadable)."""
    try:
        probe(target, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not pids:
        return running(None)
    for pid in pids:
        try:
            fields: list[str] | None = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            fields = None
        if running(fields):
            return True
    return False


class SGLangServer:
    """Context manager around `python -m sglang.launch_server`; `url` is valid inside the block."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        tp: int,
        tool_call_parser: str,
        reasoning_parser: str | None = None,
        config: ServerConfig | None = None,
        launch: Sequence[str] = SGLANG_LAUNCH,
        log_path: Path | None = None,
        stop_grace_s: float = 20.0,
    ) -> None:
        self.model_path = str(model_path)
        self.tp = tp
        self.tool_call_parser = tool_call_parser
        self.reasoning_parser = reasoning_parser
        self.config = config or ServerConfig()
        self.launch = tuple(launch)
        self.log_path = log_path
        self.stop_grace_s = stop_grace_s
        self._process: subprocess.Popen[bytes] | None = None
        self._previous_sigterm: Any = None

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def command(self) -> list[str]:
        return launch_argv(
            self.model_path,
            tp=self.tp,
            tool_call_parser=self.tool_call_parser,
            reasoning_parser=self.reasoning_parser,
            config=self.config,
            launch=self.launch,
        )

    def start(self) -> None:
        if _port_in_use(self.config.host, self.config.port):
            # A health check would succeed against whatever already listens there.
            raise ServerStartError(f"port {self.config.port} on {self.config.host} is already in use")
        log: Any = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        # The kernel's parent-death signal follows the thread that forks: only the main thread lives
        # as long as this process. t3rl_core.lifetime (stdlib only, run as a file so that it needs no
        # import path) execs the server with it set; it is told this process's pid, which it cannot read
        # itself once this process is gone (killed as the wrapper's interpreter starts).
        lifetime = [sys.executable, LIFETIME, "--parent", str(os.getpid()), "--"] if _in_main_thread() else []
        # Checked now, so that an unset or empty key fails here; the server's own process reads it
        # again (t3rl_core.secret_launch, which also masks it in the server's log): no argv holds it.
        self._key()
        argv = self.command()
        if self.config.api_key is not None:
            argv += ["--api-key", str(self.config.api_key)]
        try:
            self._process = subprocess.Popen(
                [*lifetime, *argv_for(argv)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        finally:
            if self.log_path:
                log.close()
        self._trap_sigterm()
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Terminate the server's whole process group, SIGKILL what outlives the grace period, and
        return once every process of it has ended (`stop_group`). Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            stop_group(process.pid, self.stop_grace_s, reap=process.poll)
        self._restore_sigterm()

    def __enter__(self) -> SGLangServer:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _key(self) -> str | None:
        if self.config.api_key is None:
            return None
        key = self.config.api_key.reveal().get_secret_value()
        if not key:
            # SGLang takes an empty --api-key as no key at all: the server would answer anyone.
            raise ServerStartError(f"eval.server.api_key ({self.config.api_key}) is empty")
        return key

    def _wait_healthy(self) -> None:
        assert self._process is not None
        headers = _auth_headers(self.config.api_key)
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            code = self._process.poll()
            if code is not None:
                raise ServerStartError(
                    f"server exited with code {code} before it was healthy{self._log_hint()}"
                )
            if _healthy(self.url, headers):
                return
            time.sleep(0.5)
        raise ServerStartError(
            f"server not healthy at {self.url}/health after {self.config.startup_timeout_s:.0f} s"
            + self._log_hint()
        )

    def _log_hint(self) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        return f"; last lines of {self.log_path}:\n" + log_tail(self.log_path.read_text(errors="replace"))

    def _trap_sigterm(self) -> None:
        if _in_main_thread():
            self._previous_sigterm = signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and _in_main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


# How long processes SIGKILLed may take to end (a failure guard: they end at their next scheduling turn,
# seconds away on a busy machine; one in uninterruptible sleep may take longer, and is left then).
KILLED_WAIT_S = 30.0


def stop_group(pgid: int, grace_s: float, reap: Callable[[], object] | None = None) -> bool:
    """Stop every process of group `pgid`: SIGTERM, up to `grace_s` for all of them to end, SIGKILL
    what is left, and wait for that too. The group's end is what frees the GPUs and the port, not its
    leader's: SGLang's scheduler and detokenizer may outlive the launcher that forked them (a child
    that ignores or is slow on SIGTERM), and a stop that waited for the leader alone returned with them
    running. `reap` (the leader's Popen.poll) collects the leader once it exits. True when the group
    ended."""
    _signal_group(pgid, signal.SIGTERM)
    if _group_ends(pgid, grace_s, reap):
        return True
    _signal_group(pgid, signal.SIGKILL)
    return _group_ends(pgid, KILLED_WAIT_S, reap)


def _group_ends(pgid: int, within_s: float, reap: Callable[[], object] | None) -> bool:
    deadline = time.monotonic() + within_s
    while True:
        if reap is not None:
            reap()
        if not _group_alive(pgid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _auth_headers(api_key: Secret | None) -> dict[str, str]:
    if api_key is None:
        return {}
    return {"Authorization": f"Bearer {api_key.reveal().get_secret_value()}"}


def _healthy(url: str, headers: dict[str, str] | None = None, path: str = "/health") -> bool:
    # Here, not at module level: the launcher imports this module to plan (urllib.request pulls in
    # http.client and ssl), and only a running eval polls a server.
    import urllib.error  # lazy: urllib.request (http.client, email), only to poll a server
    import urllib.request  # lazy: urllib.request (http.client, email), only to poll a server

    # SGLang answers /health without a key; a proxy in front of it may not.
    request = urllib.request.Request(f"{url}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex((host, port)) == 0
