"""A stand-in SandboxFusion server on 127.0.0.1: the documented `/run_code` request and response.

It really runs each cell with this interpreter (so Success / Failed / TimeLimitExceeded are genuine)
and injects failure modes on demand: queue names in `faults`, one per upcoming request.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

REQUEST_FIELDS = {"code", "language", "run_timeout", "compile_timeout", "stdin", "files", "fetch_files"}


class FusionStandIn:
    def __init__(self) -> None:
        # "http500", "sandbox_error", "garbage" (non-JSON body), "hang" (answers only once the stand-in
        # closes), "slow" (answers after 0.2 s).
        self.faults: list[str] = []
        self.closing = asyncio.Event()
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            fault = self.faults.pop(0) if self.faults else None
            if fault == "http500":
                return web.Response(status=500, text="internal error")
            if fault == "garbage":
                return web.Response(text="<html>bad gateway</html>")
            if fault == "sandbox_error":
                return web.json_response(_response("SandboxError", "executor pod lost", None))
            if fault == "hang":
                await self.closing.wait()
            if fault == "slow":
                await asyncio.sleep(0.2)
            if set(body) != REQUEST_FIELDS or body["language"] != "python":
                return web.json_response({"detail": f"invalid request: {sorted(body)}"}, status=422)
            return web.json_response(await _execute(body["code"], float(body["run_timeout"])))
        finally:
            self.in_flight -= 1


def _response(status: str, message: str, run_result: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "status": status,
        "message": message,
        "compile_result": None,
        "run_result": run_result,
        "executor_pod_name": None,
        "files": {},
    }


async def _execute(code: str, run_timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), run_timeout)
        state = "Finished"
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        state = "TimeLimitExceeded"
    run = {
        "status": state,
        "execution_time": time.monotonic() - started,
        "cpu_time": None,
        "return_code": proc.returncode if state == "Finished" else None,
        "stdout": out.decode(),
        "stderr": err.decode(),
    }
    ok = state == "Finished" and proc.returncode == 0
    return _response("Success" if ok else "Failed", "", run)


@contextlib.asynccontextmanager
async def serve() -> AsyncIterator[FusionStandIn]:
    standin = FusionStandIn()
    app = web.Application()
    app.router.add_post("/run_code", standin.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    standin.url = f"http://127.0.0.1:{port}"
    try:
        yield standin
    finally:
        standin.closing.set()
        await runner.cleanup()
