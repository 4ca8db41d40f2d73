"""The SandboxFusion client against a stand-in `/run_code` server: mapping, retries, timeouts, concurrency."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

from t3rl_core.registries import SANDBOXES
from t3rl_core.sandbox.fusion import SandboxFusionClient
from tests.sandbox.fusion_standin import FusionStandIn, serve

Check = Callable[[SandboxFusionClient, FusionStandIn], Awaitable[Any]]


def with_client(test: Check, faults: tuple[str, ...] = (), **fields: Any) -> Any:
    async def go() -> Any:
        async with serve() as standin:
            standin.faults.extend(faults)
            config = {"name": "sandbox_fusion", "url": standin.url + "/", "backoff_initial_s": 0.01, **fields}
            client = SANDBOXES.build(SANDBOXES.validate(config))
            assert isinstance(client, SandboxFusionClient)
            try:
                return await test(client, standin)
            finally:
                await client.aclose()

    return asyncio.run(go())


def test_success_and_the_documented_request():
    async def test(client, standin):
        r = await client.run("print(1)")
        assert (r.status, r.stdout, r.stderr, r.exit_code, r.error) == ("success", "1\n", "", 0, None)
        assert standin.requests == [
            {
                "code": "print(1)",
                "language": "python",
                "run_timeout": 10.0,
                "compile_timeout": 10.0,
                "stdin": None,
                "files": {},
                "fetch_files": [],
            }
        ]

    with_client(test)


def test_a_failing_cell_is_not_retried():
    async def test(client, standin):
        r = await client.run("raise ValueError('boom')")
        assert (r.status, r.exit_code, r.error) == ("error", 1, "exit code 1")
        assert r.stderr.rstrip().endswith("ValueError: boom")
        assert len(standin.requests) == 1

    with_client(test)


def test_time_limit_exceeded_is_a_timeout():
    async def test(client, standin):
        r = await client.run("import time\ntime.sleep(5)")
        assert (r.status, r.exit_code, r.error) == ("timeout", None, "SandboxFusion time limit exceeded")
        assert standin.requests[0]["run_timeout"] == 0.5

    with_client(test, run_timeout_s=0.5)


def test_transient_failures_are_retried_until_success():
    async def test(client, standin):
        r = await client.run("print('finally')")
        assert (r.status, r.stdout) == ("success", "finally\n")
        assert len(standin.requests) == 4

    with_client(test, faults=("http500", "sandbox_error", "garbage"))


def test_a_hanging_server_is_timed_out_and_retried():
    async def test(client, standin):
        r = await client.run("print(2)")
        assert (r.status, r.stdout) == ("success", "2\n")
        assert len(standin.requests) == 2

    # Long enough for the retry to run its cell on a busy machine; the hanging attempt never answers. The
    # wait is declared above the cell's run limit, so the limit comes down with it.
    with_client(test, faults=("hang",), run_timeout_s=2.0, request_timeout_s=3.0)


def test_attempts_are_bounded():
    async def test(client, standin):
        r = await client.run("print(3)")
        assert r.status == "sandbox_error" and r.exit_code is None
        assert "failed 3 times; last: HTTP 500: internal error" in r.error
        assert len(standin.requests) == 3

    with_client(test, faults=("http500",) * 5, max_attempts=3)


def test_sandbox_error_status_exhausts_attempts_with_its_message():
    async def test(client, standin):
        r = await client.run("print(4)")
        assert r.status == "sandbox_error" and r.error.endswith("last: SandboxError: executor pod lost")

    with_client(test, faults=("sandbox_error",) * 2, max_attempts=2)


def test_concurrency_is_bounded():
    async def test(client, standin):
        results = await asyncio.gather(*[client.run(f"print({i})") for i in range(6)])
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(6)]
        assert standin.max_in_flight == 2

    with_client(test, faults=("slow",) * 6, max_concurrency=2)


def test_unreachable_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the client connects

    async def go() -> None:
        config = {"name": "sandbox_fusion", "url": f"http://127.0.0.1:{port}", "max_attempts": 2}
        client = SANDBOXES.build(SANDBOXES.validate({**config, "backoff_initial_s": 0.01}))
        try:
            r = await client.run("print(1)")
        finally:
            await client.aclose()
        assert r.status == "sandbox_error"
        assert "failed 2 times; last: ClientConnectorError" in r.error

    asyncio.run(go())


def test_a_failure_names_the_server_without_its_credential():
    """A server URL carrying a token (a query parameter a gateway checks): the error, which logs and
    run records carry, shows the server with the token masked."""
    token = "hf_" + "Q7rT2xW9" * 4
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go() -> None:
        url = f"http://127.0.0.1:{port}/?token={token}"
        config = {"name": "sandbox_fusion", "url": url, "max_attempts": 1}
        client = SANDBOXES.build(SANDBOXES.validate(config))
        try:
            r = await client.run("print(1)")
        finally:
            await client.aclose()
        assert r.status == "sandbox_error" and f"127.0.0.1:{port}" in r.error
        assert token not in r.error, r.error

    asyncio.run(go())
