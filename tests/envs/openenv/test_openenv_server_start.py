"""An OpenEnv server started by `env.command` that exits during its start takes what it forked with it,
and its failure is reported at once. The error path read the command's stderr to its end before
anything else, and raised without stopping the server's process group: a worker the command had forked
(a reloader's child, a multi-process server's worker) ran on holding its port, and, while it held its
copy of stderr, the start waited for it to exit (an hour here) instead of failing."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.server import EnvServer, EnvServerError
from tests.support.processes import alive
from tests.support.tiny_stack import free_port

# Forks a worker that writes its pid (closing its stderr first when told to) and sleeps for an hour;
# the command waits for the pid, then exits 3 before answering any /health.
_COMMAND = """
import os, sys, time
marker, keeps_stderr = sys.argv[1], sys.argv[2] == "keeps"
if os.fork() == 0:
    if not keeps_stderr:
        os.close(2)
    with open(marker + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.replace(marker + ".tmp", marker)
    time.sleep(3600)
    os._exit(0)
while not os.path.exists(marker):
    time.sleep(0.01)
sys.exit(3)
"""
# Far longer than a failed start takes on a busy machine, far shorter than the worker's hour.
REPORTED_WITHIN_S = 240


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("stderr", ["keeps", "closes"], ids=["worker-keeps-stderr", "worker-closes-stderr"])
def test_a_command_that_exits_while_starting_leaves_nothing_it_forked(tmp_path: Path, stderr: str) -> None:
    marker = tmp_path / "worker.pid"
    script = tmp_path / "server.py"
    script.write_text(_COMMAND)
    config = OpenEnvEnvConfig(
        url=f"http://127.0.0.1:{free_port()}",
        command=[sys.executable, str(script), str(marker), stderr],
        startup_timeout_s=3000,
    )
    raised: list[BaseException] = []

    def start() -> None:
        try:
            EnvServer(config)
        except BaseException as exc:  # what the start raised is asserted below
            raised.append(exc)

    starting = threading.Thread(target=start, daemon=True)
    starting.start()
    starting.join(REPORTED_WITHIN_S)
    pid = int(marker.read_text()) if marker.exists() else None
    try:
        assert not starting.is_alive(), "the failed start waited for the worker holding its stderr"
        assert len(raised) == 1 and isinstance(raised[0], EnvServerError), raised
        assert "exited with 3" in str(raised[0])
        assert pid is not None and not alive(pid), "the worker the command forked outlived its failed start"
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
