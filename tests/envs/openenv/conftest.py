"""The OpenEnv environment the tests play is served as a published one is: its own server process
(uvicorn), started by the world from env.command."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.support.tiny_stack import free_port


def server_command(port: int) -> list[str]:
    """The example counter environment's server (env=openenv's default), as `uvicorn` serves it."""
    app = "t3rl_core.envs.openenv.counter_example:app"
    return [sys.executable, "-m", "uvicorn", app, "--port", str(port)]


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture(autouse=True)
def quiet_proxies(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loopback only: a proxy setting of the machine must not route the test's requests."""
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    yield
