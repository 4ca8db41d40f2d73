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
from collections.abc import Sequence
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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


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
        """Terminate the server's process group; SIGKILL after the grace period. Idempotent."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.stop_grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        elif process is not None:
            # The leader is gone but children it forked may still hold GPUs or the port.
            _signal_group(process.pid, signal.SIGKILL)
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
