"""Pre-flight of an OpenEnv server t3rl calls but does not start (env.url, env.command=null, no service
writing it): it is asked for its schema from this machine, and a server that does not answer is named
at env.url with the ways to have one there, before any stage starts. Before, nothing was said until the
data stage failed to build the world."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from test_preflight import _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.tiny_stack import free_port

HUB = ["+experiment=hub_env_grpo", "env=openenv", "env.command=null"]
WARNING = re.compile(
    r"^warning env\.url: (?P<message>.*?)\n\s+set in: (?P<source>.*?)\n\s+fix: (?P<fix>.*?)$", re.M
)


@pytest.fixture(autouse=True)
def loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy setting of the machine must not route the probe."""
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


class _Schema(BaseHTTPRequestHandler):
    """An OpenEnv server's /schema, as create_app publishes it."""

    def do_GET(self) -> None:
        found = self.path == "/schema"
        body = json.dumps({"action": {"type": "object", "properties": {}}}).encode()
        self.send_response(200 if found else 404)
        self.end_headers()
        self.wfile.write(body if found else b"")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def running() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Schema)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _warnings(out: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in WARNING.finditer(out)]


def test_a_server_that_does_not_answer_is_named_at_env_url(sandbox: Path) -> None:  # noqa: F811
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    code, out = _invoke("validate", *HUB, f"env.url={url}")
    assert code == 0, out  # the server may be started before the run
    (warning,) = _warnings(out)
    assert warning["message"].startswith(f"the openenv server at {url} does not answer GET /schema"), warning
    assert "its data stage first) would fail" in warning["message"]
    assert warning["source"] == f"override `env.url={url}`"
    assert "env.command" in warning["fix"] and "env_url_key: url" in warning["fix"]


def test_a_server_that_answers_is_not_named(sandbox: Path, running: str) -> None:  # noqa: F811
    code, out = _invoke("validate", *HUB, f"env.url={running}")
    assert code == 0 and not _warnings(out), out


def test_a_server_t3rl_starts_is_not_asked_before_it_is_started(sandbox: Path) -> None:  # noqa: F811
    port = free_port()
    app = "'t3rl_core.envs.openenv.counter_example:app'"
    started = f"env.command=[python3,-m,uvicorn,{app},--port,'{port}']"
    code, out = _invoke("validate", *HUB[:2], f"env.url=http://127.0.0.1:{port}", started)
    assert code == 0 and not _warnings(out), out
    service = (
        f"+services.env_server={{kind: command, command: [python3, -m, uvicorn, {app}, --port, '{{port}}'], "
        f"port: {port}, env_url_key: url, url_path: ''}}"
    )
    code, out = _invoke("validate", *HUB, service)
    assert code == 0 and not _warnings(out), out
