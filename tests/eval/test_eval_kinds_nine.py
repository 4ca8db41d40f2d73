"""Eval kinds of round nine: a server whose forked processes outlive its launcher on SIGTERM (stop()
waited for the launcher alone), and a resume of records whose file a crash left with a line that holds
no JSON object (bytes that are no UTF-8, a torn multibyte character, another JSON value)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.resume import INDEX_FILE
from t3rl_core.eval.runner import TRAJECTORIES_FILE, run_eval
from t3rl_core.eval.server import SGLangServer
from tests.support.eval_runs import bfcl_runtime, count_episodes, read_records, reference_config
from tests.support.processes import alive
from tests.support.tiny_stack import bfcl_rows, free_port

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
        port=free_port(), startup_timeout_s=120, extra_args=["--worker", str(worker), "--on-term", on_term]
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
        assert alive(pid)
    try:
        assert not alive(pid), "a process of the server's group outlived stop()"
        if on_term == "cleanup":
            assert (tmp_path / "worker.pid.cleaned").exists()  # ended by its own handler, not SIGKILLed
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# --- Resuming records a crash left torn -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "file"),
    [
        (b'{"task_id": "x", "text": "caf\xc3', TRAJECTORIES_FILE),  # cut inside a multibyte character
        (b"\xff\xfe\x00\x00\n", TRAJECTORIES_FILE),  # the rest of a block past the crash
        (b"[1, 2]\n", TRAJECTORIES_FILE),
        (b'"a record"\n', TRAJECTORIES_FILE),
        (b"\xff\n", INDEX_FILE),
        (b'{"key": ["x", 0, 0], "attempt": "two"}\n', INDEX_FILE),
    ],
    ids=["torn-utf8", "no-utf8", "list", "text", "index-no-utf8", "index-attempt-text"],
)
def test_a_resume_keeps_every_verified_record_past_lines_that_hold_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: bytes, file: str
) -> None:
    """--resume read the files whole as UTF-8 and each line's JSON as an object: one byte that is no
    UTF-8 (UnicodeDecodeError) or a line holding a list or a text (AttributeError) raised out of the
    resume, and the eval could not be continued at all, its finished episodes stranded."""
    rows = bfcl_rows(per_category=1)[:3]
    asyncio.run(run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, show_progress=False))
    with open(tmp_path / file, "ab") as records:
        records.write(tail)
    played = count_episodes(monkeypatch)
    summary = asyncio.run(
        run_eval(bfcl_runtime(), reference_config(), rows, tmp_path, resume=True, show_progress=False)
    )
    assert summary["complete"] and played == []  # every finished episode verified and kept
    assert len(read_records(tmp_path)) == len(rows)
    assert tail not in (tmp_path / file).read_bytes()  # the files hold the kept lines only
