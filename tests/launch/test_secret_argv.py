"""No command line holds a credential a planned server needs (issue 22 §2, `ps` shows every user each
process's argv): the eval stage's SGLang server with `eval.server.api_key` (env:NAME, file:PATH) or a
key in `eval.server.extra_args`, a managed service with a key in its extra_args, and `t3rl eval`'s own
server. Real processes, with a stand-in server that refuses to start without its key and wants it on
every request (tests/support/keyed_sglang.py): every process the planned lines start is read from
/proc/<pid>/cmdline while the server answers, and the server's log holds the mask."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from launch.config.schema import ServiceConfig
from launch.plan.build import PlanContext, build_plan
from launch.plan.services import wrap
from launch.plan.stages import Stage, render_command
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import SGLangServer
from tests.launch.run_configs import make_run
from tests.launch.test_plan import full_stages
from tests.support.tiny_stack import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

KEYED = str(Path(__file__).resolve().parents[1] / "support" / "keyed_sglang.py")
REPO = Path(__file__).resolve().parents[2]
KEY = "sk-argv-planted-5d0e2b71c9"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), *sys.path]), "ARGV_TEST_KEY": KEY}


def _healthy(port: int, key: str) -> bool:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/health", headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _wait_healthy(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while not _healthy(port, KEY):
        if process.poll() is not None and not _session_processes(process.pid):
            raise AssertionError(f"exited {process.returncode}: {log.read_text() if log.exists() else ''}")
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.1)


def _wait_logged(log: Path, text: str) -> None:
    deadline = time.monotonic() + 60
    while not (log.exists() and text in log.read_text()):
        assert time.monotonic() < deadline, log.read_text() if log.exists() else "no log"
        time.sleep(0.1)


def _session_processes(session: int) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            if os.getsid(process.pid) == session:
                found.append(process)
    return found


def _command_lines(session: int) -> list[str]:
    """The argv of every live process of the session, as the kernel shows it to everyone."""
    lines = []
    for process in _session_processes(session):
        with contextlib.suppress(OSError):
            lines.append(Path(f"/proc/{process.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
    return lines


@contextlib.contextmanager
def _session(script: str, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    shell = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=ENV, start_new_session=True)
    try:
        yield shell
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def _eval_server_lines(tmp_path: Path, port: int, server: dict) -> tuple[Stage, str]:
    """The planned eval stage, and its lines up to the server's start with the stand-in server in
    place of `-m sglang.launch_server`."""
    evaluation = {"engine": {"name": "sglang"}, "server": {"port": port, **server}}
    run = make_run(stages=full_stages(eval=evaluation))
    ctx = PlanContext(tmp_path / "run", tmp_path, str(REPO), sys.executable, "argv-test", dict(ENV))
    stage = build_plan(run, ctx).stage("eval")
    lines = [render_command(c) for c in stage.commands]
    upto = next(i for i, line in enumerate(lines) if line == "server_pid=$!")
    script = "\n".join(lines[:upto]).replace("-m sglang.launch_server", KEYED)
    assert KEYED in script  # the stand-in replaced the planned server, nothing else
    return stage, "set -euo pipefail\n" + script + "\nwait\n"


@pytest.mark.parametrize(
    "server",
    [
        {"api_key": "env:ARGV_TEST_KEY"},  # the documented way
        {"api_key": "file:KEYFILE"},
        {"extra_args": ["--api-key", "env:ARGV_TEST_KEY"]},  # straight into the server's flags
        {"extra_args": ["--api-key=file:KEYFILE"]},
    ],
    ids=["api_key-env", "api_key-file", "extra_args-env", "extra_args-file"],
)
def test_the_eval_servers_key_is_in_no_command_line_and_no_log(tmp_path: Path, server: dict) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    server = {k: v.replace("KEYFILE", str(key_file)) if isinstance(v, str) else v for k, v in server.items()}
    if "extra_args" in server:
        server["extra_args"] = [a.replace("KEYFILE", str(key_file)) for a in server["extra_args"]]
    port = free_port()
    stage, script = _eval_server_lines(tmp_path, port, server)
    assert KEY not in "\n".join(render_command(c) for c in stage.commands)
    # Pre-flight knows what the server reads where the stage runs.
    assert "ARGV_TEST_KEY" in stage.requires_env or str(key_file) in stage.requires
    log = tmp_path / "run" / "stages" / "eval" / "server.log"
    with _session(script, tmp_path) as shell:
        _wait_healthy(port, shell, log)  # the stand-in got the key: it refuses to start without one
        lines = _command_lines(shell.pid)
        assert any("t3rl_core.secret_launch" in line and KEYED in line for line in lines), lines
        assert [line for line in lines if KEY in line] == []
        assert not _healthy(port, "sk-a-wrong-key-000000")
        # The log copier masks and writes the server's output apart from it: on a busy machine its
        # arguments' line may reach the file after the server answers, so wait for it before the kill.
        _wait_logged(log, "api_key=")
    text = log.read_text()
    assert KEY not in text and "api_key='***'" in text  # its logged arguments, masked


def test_a_services_key_is_in_no_command_line_and_no_log(tmp_path: Path) -> None:
    port = free_port()
    service = ServiceConfig(
        model_path="/m",
        port=port,
        launch=[sys.executable, KEYED],
        extra_args=["--api-key", "env:ARGV_TEST_KEY"],
        startup_timeout_s=60,
    )
    stage = wrap(Stage("s", "train", ("sleep 60",)), [("user_sim", service)], sys.executable, str(tmp_path))
    assert stage.requires_env.keys() == {"ARGV_TEST_KEY"}
    for path, text in stage.files.items():
        assert KEY not in text
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    script = "set -euo pipefail\n" + "\n".join(render_command(c) for c in stage.commands) + "\n"
    log = tmp_path / "stages" / "s" / "user_sim.log"
    with _session(script, tmp_path) as shell:
        _wait_healthy(port, shell, log)
        lines = _command_lines(shell.pid)
        assert any("t3rl_core.services keep" in line for line in lines), lines
        assert [line for line in lines if KEY in line] == []
        _wait_logged(log, "api_key=")  # as above: the copier's line may come after the answer
    text = log.read_text()
    assert KEY not in text and "api_key='***'" in text


def test_t3rl_evals_own_server_gets_its_key_by_no_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGV_TEST_KEY", KEY)
    config = ServerConfig(port=free_port(), startup_timeout_s=60.0, api_key="env:ARGV_TEST_KEY")
    server = SGLangServer(
        tmp_path / "model", tp=1, tool_call_parser="qwen25", config=config, launch=(sys.executable, KEYED),
        log_path=tmp_path / "server.log",
    )  # fmt: skip
    with server:
        assert server._process is not None
        lines = _command_lines(server._process.pid)  # the server's own session
        assert lines and [line for line in lines if KEY in line] == []
    assert KEY not in (tmp_path / "server.log").read_text()


def test_a_key_cannot_go_to_a_program_that_is_no_python_entry_point() -> None:
    from launch.config.errors import ConfigError

    service = ServiceConfig(model_path="/m", launch=["sglang", "serve"], extra_args=["--api-key", "env:K"])
    with pytest.raises(ConfigError, match=r"services\.user_sim\.launch"):
        wrap(Stage("s", "train", ("true",)), [("user_sim", service)], sys.executable, "/run")
