"""Secrets in the logs t3rl copies from elsewhere: a Ray job's log and a server's output.

A stage on a Ray cluster prints a private key over lines (a service account's key, an SSH key a job
dumps) and a token; Ray streams its log in chunks that cut lines anywhere, and again from the start
on every attach. Neither the stage's log.txt, nor the terminal, nor the copy of the job's whole log in
the run directory (`stages/<name>/ray/<id>.log`) may hold the key's body or the token. A server
started with a key (`t3rl_core.redact.mask_output`) prints a private key whose lines reach its copier
in separate reads: the copier masks every line up to the key's END line. A server that does not start
is reported with the last lines of its log: a key whose BEGIN line is above them is masked there too.
"""

from __future__ import annotations

import base64
import io
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from launch.checks.probes import _probe
from launch.plan.stages import ImportCheck
from launch.run.executors.ray_jobs import JobSpec, RayJobRunner
from launch.run.import_check import _failures
from t3rl_core.eval.config import ServerConfig
from t3rl_core.eval.server import ServerStartError, SGLangServer
from t3rl_core.services import ServiceSpec, start
from tests.support.tiny_stack import free_port

REPO = Path(__file__).resolve().parents[2]
# The same key and token every run (tests/support/draws.py): drawn anew each run, a key whose look
# some rule misread would fail one run in many, for no change.
_DRAWS = random.Random(__name__)
BODY = [base64.b64encode(_DRAWS.randbytes(48)).decode() for _ in range(4)]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "".join(f"{line}\n" for line in BODY)
PEM += "-----END RSA PRIVATE KEY-----\n"
TOKEN = "hf_" + _DRAWS.randbytes(17).hex()
# A key longer than the 20 lines an error quotes of a server's log: its BEGIN line is not among them.
LONG_BODY = [base64.urlsafe_b64encode(_DRAWS.randbytes(48)).decode() for _ in range(30)]
LONG_PEM = "-----BEGIN PRIVATE KEY-----\n" + "".join(f"{line}\n" for line in LONG_BODY)
LONG_PEM += "-----END PRIVATE KEY-----\n"
JOB_LOG = f"step 1\n{PEM}loaded HF_TOKEN={TOKEN} from the cluster\nlast line without an end"


class _Cluster:
    """The part of Ray's job client `_follow` uses: a running job whose log arrives in `chunks`,
    finished once they are read; a finished job's whole log in one call."""

    def __init__(self, chunks: list[str], running: bool) -> None:
        self.chunks = chunks
        self.running = running

    def get_job_status(self, job_id: str) -> SimpleNamespace:
        return SimpleNamespace(value="RUNNING" if self.running else "SUCCEEDED")

    async def tail_job_logs(self, job_id: str) -> AsyncIterator[str]:
        for chunk in self.chunks:
            yield chunk
        self.running = False

    def get_job_logs(self, job_id: str) -> str:
        return "".join(self.chunks)

    def submit_job(self, **job: object) -> str:
        return "t3rl-probe-1"


def _follow(chunks: list[str], running: bool, stage_dir: Path) -> tuple[str, str]:
    log, out = io.StringIO(), io.StringIO()
    runner = RayJobRunner("http://ray-head:8265", client=_Cluster(chunks, running), out=out)
    assert runner._follow("t3rl-run-stage-1", stage_dir, log) == "SUCCEEDED"
    return log.getvalue(), out.getvalue()


def _leaked(text: str) -> list[str]:
    return [value for value in [*BODY, TOKEN, TOKEN[:14], TOKEN[-14:]] if value in text]


def test_a_ray_jobs_private_key_and_a_token_cut_between_chunks_are_masked_in_every_copy(tmp_path):
    """Before: log.txt and the terminal had the key's body (each chunk was masked alone) and the token's
    halves; the run directory's copy of the job's log had everything unmasked."""
    cuts = sorted({JOB_LOG.index(TOKEN) + 7, JOB_LOG.index(BODY[1]) + 10, JOB_LOG.index(PEM) + 5, 3})
    chunks = [JOB_LOG[a:b] for a, b in zip([0, *cuts], [*cuts, len(JOB_LOG)], strict=True)]
    log, out = _follow(chunks, running=True, stage_dir=tmp_path)
    full = (tmp_path / "ray" / "t3rl-run-stage-1.log").read_text()
    for name, text in (("log.txt", log), ("terminal", out), ("the job's whole log", full)):
        assert not _leaked(text), (name, text)
        assert "step 1" in text and "-----END RSA PRIVATE KEY-----" in text and "from the cluster" in text
        assert text.endswith("last line without an end"), (name, text)


def test_a_re_attached_ray_log_is_masked_and_has_every_line_once(tmp_path):
    """Masking changes the copy's length: what was copied is counted in the job's own bytes, so a
    re-attach (Ray replays the log from its start) adds only the lines that are new."""
    first = JOB_LOG.rpartition("\n")[0] + "\n"
    _follow([first[:40], first[40:]], running=True, stage_dir=tmp_path)
    log, _ = _follow([JOB_LOG + "\nafter the re-attach\n"], running=False, stage_dir=tmp_path)
    full = (tmp_path / "ray" / "t3rl-run-stage-1.log").read_text()
    assert log.count("step 1") == 0 and log.count("last line without an end") == 1, log
    assert full.count("step 1") == 1 and full.count("after the re-attach") == 1, full
    assert not _leaked(full), full


def test_a_ray_probe_jobs_log_is_masked_before_its_last_line_is_quoted():
    """A plugin probe that failed is reported with its log's last line: before, that was the key's last
    line of body, as it was."""
    cut_short = LONG_PEM.partition("-----END")[0]  # the job died while printing it
    runner = RayJobRunner(
        "http://ray-head:8265", client=_Cluster([f"importing the plugin\n{cut_short}"], False)
    )
    output, status = runner.probe(JobSpec("python -c 1", {}), 60)
    assert status == "SUCCEEDED" and "importing the plugin" in output
    assert not _long_key_leaked(output.strip().splitlines()[-1]), output


def test_a_servers_copier_masks_a_private_key_whose_lines_arrive_in_separate_reads():
    """The server prints the key's BEGIN line and first line, waits until the copier has passed them
    on, then prints the rest: before, the copier masked each read alone, so the rest went out as is."""
    child = textwrap.dedent(
        f"""
        import sys
        from t3rl_core.redact import mask_output
        mask_output(["the-servers-own-api-key-value"])
        print("-----BEGIN PRIVATE KEY-----\\n{BODY[0]}", flush=True)
        sys.stdin.readline()
        print("{BODY[1]}\\n{BODY[2]}\\n-----END PRIVATE KEY-----\\nserver ready", flush=True)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", child],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    begin = proc.stdout.readline()  # the copier has read and written the key's first part
    rest, _ = proc.communicate("go\n", timeout=120)
    assert begin.startswith("-----BEGIN PRIVATE KEY-----"), begin
    assert not _leaked(begin + rest), begin + rest
    assert "-----END PRIVATE KEY-----" in rest and "server ready" in rest, rest


def _long_key_leaked(text: str) -> list[str]:
    return [line for line in LONG_BODY if line in text]


def test_an_sglang_server_that_did_not_start_quotes_its_log_with_a_private_key_masked(tmp_path):
    """Before: the error quoted the last 20 lines, the key's body without its BEGIN line, as they were."""
    log = tmp_path / "server.log"
    log.write_text("loading the service account\n" + LONG_PEM)
    config = ServerConfig(port=free_port(), startup_timeout_s=60.0, extra_args=["--fake-exit", "3"])
    fake = (sys.executable, str(REPO / "tests" / "support" / "fake_sglang.py"))
    server = SGLangServer(
        tmp_path / "model", tp=1, tool_call_parser="qwen25", config=config, launch=fake, log_path=log
    )
    with pytest.raises(ServerStartError) as caught:
        server.start()
    message = str(caught.value)
    assert "last lines of" in message and "-----END PRIVATE KEY-----" in message, message
    assert not _long_key_leaked(message), message


def test_a_service_that_did_not_start_quotes_its_log_with_a_private_key_masked(tmp_path):
    spec = ServiceSpec(
        name="env_server", kind="command", port=free_port(), startup_timeout_s=60,
        command=[sys.executable, "-c", f"print({LONG_PEM!r}, flush=True); raise SystemExit(3)"],
        pid_file=str(tmp_path / "env.pid"), log_file=str(tmp_path / "env.log"),
    )  # fmt: skip
    with pytest.raises(ServerStartError) as caught:
        start(spec, owner=os.getpid())
    message = str(caught.value)
    assert "last lines of" in message and "-----END PRIVATE KEY-----" in message, message
    assert not _long_key_leaked(message), message


def test_a_plugin_that_dies_printing_a_private_key_is_reported_without_it(tmp_path):
    """The import probe (pre-flight's and each run's) reports a probe that printed no verdict by its
    stderr's last line: before, the key's last line of body, as it was."""
    module = f"leaky_plugin_{_DRAWS.randbytes(4).hex()}"
    cut_short = LONG_PEM.partition("-----END")[0]
    (tmp_path / f"{module}.py").write_text(
        f"import os, sys\nsys.stderr.write({cut_short!r})\nsys.stderr.flush()\nos._exit(1)\n"
    )
    found = _probe(sys.executable, str(tmp_path), (module,))
    assert found is not None and module in found, found
    run_time = _failures(ImportCheck(sys.executable, str(tmp_path), (module,)))
    for reason in (found[module], run_time[module]):
        assert not _long_key_leaked(reason), reason
