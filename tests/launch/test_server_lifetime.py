"""Servers die with what started them even on SIGKILL (no trap runs then): a managed service with its
stage's shell, with its keeper; the eval stage's SGLang server with its script; the lifetime wrapper.
Real processes: a stand-in SGLang server (tests/support/fake_sglang.py) that forks a worker as SGLang
does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from launch.config.schema import ServiceConfig
from launch.plan.services import wrap
from launch.plan.stages import Stage, render_command
from tests.support.tiny_stack import free_port

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

FAKE = str(Path(__file__).resolve().parents[1] / "support" / "fake_sglang.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _gone(pid: int, within: float = 60.0) -> bool:
    """True once `pid` has exited (a zombie counts: it holds no GPU and no port). `within` is a failure
    guard: a chain of parent-death signals takes a scheduling turn per process on a busy machine."""
    deadline = time.monotonic() + within
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _wait_for(path: Path, within: float = 30.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _keeper_of(server: int) -> int:
    return int(Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _start_stage(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """A stage's script that starts a stand-in service, then works for a minute; returns the shell,
    the server's pid and its forked worker's pid once the server is healthy."""
    port, worker_file = free_port(), tmp_path / "worker.pid"
    service = ServiceConfig(
        model_path="/m",
        port=port,
        launch=[sys.executable, FAKE, "--fake-child-pid", str(worker_file)],
        startup_timeout_s=30,
    )
    commands = (f"echo working > {tmp_path / 'working'}", "sleep 60")
    stage = wrap(Stage("s", "train", commands), [("user_sim", service)], sys.executable, str(tmp_path))
    for path, text in stage.files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    script = "set -euo pipefail\n" + "\n".join(render_command(c) for c in stage.commands) + "\n"
    shell = subprocess.Popen(["bash", "-c", script], env=ENV, start_new_session=True)
    _wait_for(tmp_path / "working", within=60)  # the service was healthy: the stage's commands run
    server = int(_wait_for(tmp_path / "stages" / "s" / "user_sim.pid"))
    return shell, server, int(_wait_for(worker_file))


def _cleanup(shell: subprocess.Popen[bytes], *pids: int) -> None:
    """Whatever a failed test left: the shell's session (its sleeps, a keeper) and the servers."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(shell.pid, signal.SIGKILL)
    shell.wait()
    for pid in pids:
        if not _gone(pid, within=0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_sigkilled_stage_shell_takes_its_service_down(tmp_path: Path) -> None:
    shell, server, worker = _start_stage(tmp_path)
    try:
        keeper = _keeper_of(server)
        shell.kill()  # SIGKILL: the stage's `trap … stop … EXIT` never runs
        shell.wait()
        assert _gone(server) and _gone(worker), "the service outlived its SIGKILLed stage"
        assert _gone(keeper)
    finally:
        _cleanup(shell, server, worker)


def test_a_sigkilled_keeper_takes_its_server_down(tmp_path: Path) -> None:
    shell, server, worker = _start_stage(tmp_path)
    try:
        os.kill(_keeper_of(server), signal.SIGKILL)  # the kernel's parent-death signal kills the server
        assert _gone(server), "the server outlived its SIGKILLed keeper"
    finally:
        _cleanup(shell, server, worker)


@pytest.mark.parametrize("where", ["command.sh", "plan.sh"])
def test_the_eval_stage_server_dies_with_its_sigkilled_script(tmp_path: Path, where: str) -> None:
    """The eval stage's server line as planned (`… -m t3rl_core.lifetime --parent … -- … -m
    sglang.launch_server`, in the background of its script), with the stand-in behind `-m
    sglang.launch_server`: in the stage's command.sh, and in plan.sh, where each stage runs in a
    `( … )` subshell (the server's parent there is the subshell, not the script's shell)."""
    from types import SimpleNamespace

    from launch.plan.builders.evaluation import _with_server
    from t3rl_core.config import ParsersConfig
    from t3rl_core.eval.config import ServerConfig

    python = tmp_path / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        'if [[ "$1 $2" == "-m sglang.launch_server" ]]; then shift 2\n'
        f'  exec {sys.executable} {FAKE} "$@"\nfi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    builder = SimpleNamespace(
        run=SimpleNamespace(model=SimpleNamespace(parsers=ParsersConfig(tool_call_parser="hermes"))),
        cluster_python=lambda: str(python),
    )
    pid_file, port = tmp_path / "server.pid", free_port()
    # the eval's own command replaced by: record the server's pid, then work for a minute
    commands = _with_server(builder, ["true"], "/m", 1, ServerConfig(port=port), str(tmp_path))
    commands = (*commands[:-1], f'echo "$server_pid" > {pid_file}', "sleep 60")
    assert any("-m t3rl_core.lifetime --parent" in render_command(c) for c in commands)
    script = tmp_path / where
    body = Stage("eval", "eval", commands).script()
    if where == "plan.sh":  # as plan.sh writes a stage: its lines in a subshell
        strict, _, lines = body.partition("\n")
        body = f"{strict}\n(\n{lines})\n"
    script.write_text(body)
    shell = subprocess.Popen(["bash", str(script)], env=ENV, start_new_session=True)
    server = int(_wait_for(pid_file))
    try:
        # Past the wrapper's exec (its parent-death signal set): the stand-in runs in the server's pid. A
        # fixed half second was not enough on a busy machine, and a script killed before the wrapper's
        # interpreter started left a server tied to whatever adopted it (the plan's script does not tell
        # the wrapper its parent: see test_the_lifetime_wrapper_dies_at_once_...).
        _wait_until(lambda: FAKE in _cmdline(server) or _gone(server, within=0), "the server's start")
        assert FAKE in _cmdline(server), "the server ended in its lifetime wrapper"
        # the script's subshell, the server's parent, is SIGKILLed with everything but the server
        for pid in [*_children_of(shell.pid), shell.pid]:
            if pid != server:
                os.kill(pid, signal.SIGKILL)
        shell.wait()
        assert _gone(server), "the eval server outlived its SIGKILLed script"
    finally:
        _cleanup(shell, server)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def _wait_until(condition, what: str, within: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"not within {within:.0f} s: {what}"
        time.sleep(0.05)


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found += [int(entry.name), *_children_of(int(entry.name))]
    return found


def test_the_lifetime_wrapper_execs_in_place_and_dies_with_its_parent(tmp_path: Path) -> None:
    out = tmp_path / "pid"
    # bash starts the wrapper in the background, reports its pid, then waits to be killed
    script = f"{sys.executable} -m t3rl_core.lifetime -- sleep 60 & echo $! > {out}; sleep 60"
    shell = subprocess.Popen(["bash", "-c", script], env=ENV, start_new_session=True)
    child = int(_wait_for(out))
    try:
        # the same pid, exec'd (an interpreter's start: seconds on a busy machine)
        _wait_until(lambda: Path(f"/proc/{child}/comm").read_text().strip() == "sleep", "the wrapper's exec")
        shell.kill()
        shell.wait()
        assert _gone(child)
    finally:
        _cleanup(shell, child)


def test_the_lifetime_wrapper_dies_at_once_when_the_parent_it_is_told_is_gone_already() -> None:
    """A parent killed before the wrapper's interpreter started is no longer the wrapper's parent: the
    wrapper reading its own parent then tied the server to whatever adopted it. Told the parent's pid
    (`--parent`, as the eval server's Python process does), it kills itself instead of running ARGV."""
    from t3rl_core import lifetime

    ended = subprocess.Popen(["true"])
    ended.wait()  # a pid that no longer runs: the parent, gone before the wrapper started
    pid = os.fork()
    if pid == 0:  # the wrapper, as started: never returns to pytest
        try:
            lifetime.main(["--parent", str(ended.pid), "--", "sleep", "60"])
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


def test_the_eval_server_tells_its_wrapper_its_pid(tmp_path: Path) -> None:
    from t3rl_core.eval.config import ServerConfig
    from t3rl_core.eval.server import LIFETIME, SGLangServer

    config = ServerConfig(port=free_port(), startup_timeout_s=120)
    server = SGLangServer("m", tp=1, tool_call_parser="hermes", launch=(sys.executable, FAKE), config=config)
    with server:
        assert server._process is not None
        wrapper = list(server._process.args)[:5]  # type: ignore[arg-type]
    assert wrapper == [sys.executable, LIFETIME, "--parent", str(os.getpid()), "--"]


def test_the_lifetime_wrapper_needs_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "t3rl_core.lifetime", "--"], env=ENV, capture_output=True, text=True
    )
    assert done.returncode == 2 and "usage" in done.stderr
