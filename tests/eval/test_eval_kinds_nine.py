"""Eval kinds of round nine: a server whose forked processes outlive its launcher on SIGTERM (stop()
waited for the launcher alone), a cancelled episode's world left open, and a resume that reads a torn
record holding bytes that are no UTF-8."""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path

import pytest

from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import SGLangServer

# A stand-in for `python -m sglang.launch_server`: it forks a worker (as SGLang forks its scheduler),
# which handles SIGTERM as given, writes its pid once its handler is set, and answers /health after that.
_LAUNCHER = r"""
import argparse, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--worker")
parser.add_argument("--on-term")
args, _ = parser.parse_known_args()
worker = Path(args.worker)
code = f'''
import os, signal, time
from pathlib import Path
def cleanup(signum, frame):
    time.sleep(0.5)  # releasing what it holds
    Path({str(worker) + ".cleaned"!r}).write_text("1")
    os._exit(0)
signal.signal(signal.SIGTERM, {{"ignore": signal.SIG_IGN, "cleanup": cleanup}}[{args.on_term!r}])
Path({str(worker) + ".tmp"!r}).write_text(str(os.getpid()))
os.rename({str(worker) + ".tmp"!r}, {str(worker)!r})
time.sleep(600)
'''
subprocess.Popen([sys.executable, "-c", code])
while not worker.exists():
    time.sleep(0.01)

class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer((args.host, args.port), Health).serve_forever()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("on_term", ["ignore", "cleanup"])
def test_stop_returns_once_every_process_of_the_servers_group_has_ended(tmp_path: Path, on_term: str) -> None:
    """stop() sent SIGTERM to the group and waited for the launcher alone: a scheduler that ignores
    SIGTERM, or is still releasing its GPU memory, ran on after stop() returned (holding the GPUs and
    the port the next stage's server needs). Now: the whole group ends, SIGKILLed past the grace."""
    launcher = tmp_path / "launcher.py"
    launcher.write_text(_LAUNCHER)
    worker = tmp_path / "worker.pid"
    config = ServerConfig(
        port=_free_port(), startup_timeout_s=120, extra_args=["--worker", str(worker), "--on-term", on_term]
    )
    grace = 1.0 if on_term == "ignore" else 120.0  # the cleanup ends on its own well within 120 s
    server = SGLangServer(
        tmp_path / "model",
        tp=1,
        tool_call_parser="qwen25",
        config=config,
        launch=(sys.executable, str(launcher)),
        log_path=tmp_path / "server.log",
        stop_grace_s=grace,
    )
    with server:
        pid = int(worker.read_text())
        assert _alive(pid)
    try:
        assert not _alive(pid), "a process of the server's group outlived stop()"
        if on_term == "cleanup":
            assert (tmp_path / "worker.pid.cleaned").exists()  # ended by its own handler, not SIGKILLed
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
