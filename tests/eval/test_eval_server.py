"""The eval stage's SGLang server lifecycle, against a stand-in that speaks only /health."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import ServerStartError, SGLangServer
from tests.support.processes import alive
from tests.support.tiny_stack import free_port

FAKE = (sys.executable, str(Path(__file__).resolve().parents[1] / "support" / "fake_sglang.py"))


def _until_gone(pid, within=60.0):
    """Whether `pid` ended within `within` seconds (a failure guard: a signalled process ends at its next
    scheduling turn, which on a busy machine may be seconds away)."""
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def _server(tmp_path, *fake_args, timeout=120.0, port=None):
    config = ServerConfig(port=port or free_port(), startup_timeout_s=timeout, extra_args=list(fake_args))
    return SGLangServer(
        tmp_path / "model",
        tp=2,
        tool_call_parser="qwen25",
        reasoning_parser="qwen3",
        config=config,
        launch=FAKE,
        log_path=tmp_path / "server.log",
        stop_grace_s=5,
    )


def test_server_is_healthy_inside_and_gone_with_its_children_after(tmp_path):
    child_file, argv_file = tmp_path / "child", tmp_path / "argv"
    server = _server(tmp_path, "--fake-child-pid", str(child_file), "--fake-argv", str(argv_file))
    with server:
        with urllib.request.urlopen(f"{server.url}/health", timeout=5) as response:
            assert response.status == 200
        child = int((tmp_path / "child").read_text())
        assert alive(child)
        argv = json.loads((tmp_path / "argv").read_text())
    assert argv[:4] == ["--model-path", str(tmp_path / "model"), "--tp", "2"]
    assert argv[4:8] == ["--tool-call-parser", "qwen25", "--reasoning-parser", "qwen3"]
    assert argv[8:12] == ["--host", "127.0.0.1", "--port", str(server.config.port)]
    assert _until_gone(child), "the server's forked child survived stop()"


def test_a_crashing_server_fails_with_its_log(tmp_path):
    server = _server(tmp_path, "--fake-exit", "3")
    with pytest.raises(ServerStartError, match=r"code 3(.|\n)*simulated crash"), server:
        pass


def test_a_busy_port_is_refused_before_launching(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = _server(tmp_path, "--fake-argv", str(tmp_path / "argv"), port=taken.getsockname()[1])
        with pytest.raises(ServerStartError, match="already in use"):
            server.start()
    assert not (tmp_path / "argv").exists()


def test_startup_timeout_stops_the_server(tmp_path, monkeypatch):
    child_file = tmp_path / "child"
    server = _server(tmp_path, "--fake-delay", "60", "--fake-child-pid", str(child_file), timeout=1.5)
    original = server._wait_healthy

    def once_the_child_is_forked():
        # The 1.5 s start from the stand-in's fork of its child: on a busy machine its interpreter alone
        # may take longer, and the server was stopped before it had forked anything to stop.
        deadline = time.monotonic() + 60
        while not (child_file.exists() and child_file.read_text()):
            assert time.monotonic() < deadline, "the stand-in never forked its child"
            time.sleep(0.05)
        original()

    monkeypatch.setattr(server, "_wait_healthy", once_the_child_is_forked)
    with pytest.raises(ServerStartError, match="not healthy"):
        server.start()
    assert _until_gone(int(child_file.read_text()))


def test_sigterm_to_the_eval_process_still_stops_the_server(tmp_path):
    script = f"""
import sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import SGLangServer
fake_args = ["--fake-child-pid", {str(tmp_path / "child")!r}]
server = SGLangServer("m", tp=1, tool_call_parser="hermes", launch={list(FAKE)!r},
                      config=ServerConfig(port={free_port()}, extra_args=fake_args))
with server:
    Path({str(tmp_path / "ready")!r}).write_text("1")
    time.sleep(60)
"""
    process = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 120  # a failure guard: starved (nice 19, busy cores) this took 25 s
    while not (tmp_path / "ready").exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    child = int((tmp_path / "child").read_text())
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=120) == 128 + signal.SIGTERM
    assert _until_gone(child)  # signalled with its group; stop() waits for the server alone


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_sigkilled_eval_process_takes_its_server_down(tmp_path):
    """No `finally` runs on SIGKILL: the server carries a parent-death signal (t3rl_core.lifetime)."""
    pid_file = tmp_path / "server.pid"
    script = f"""
import sys, time
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import SGLangServer
server = SGLangServer("m", tp=1, tool_call_parser="hermes", launch={list(FAKE)!r},
                      config=ServerConfig(port={free_port()}))
with server:
    Path({str(pid_file)!r}).write_text(str(server._process.pid))
    time.sleep(60)
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the wrapper needs no import path
    process = subprocess.Popen([sys.executable, "-c", script], env=env)
    deadline = time.monotonic() + 120  # a failure guard: starved (nice 19, busy cores) this took 25 s
    while not pid_file.exists():
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    server = int(pid_file.read_text())
    try:
        assert alive(server)
        process.kill()
        process.wait()
        assert _until_gone(server), "the server outlived its SIGKILLed eval process"
    finally:
        if alive(server):
            os.kill(server, signal.SIGKILL)
