"""A client of SandboxFusion's `POST /run_code` (bytedance/SandboxFusion), as Agent-R1's ReTool uses it.

Request: {"code", "language", "run_timeout", "compile_timeout", "stdin": null, "files": {},
"fetch_files": []}. Response: {"status": "Success" | "Failed" | "SandboxError", "message",
"compile_result", "run_result", ...} with run/compile results {"status": "Finished" | "Error" |
"TimeLimitExceeded", "return_code", "stdout", "stderr", ...}. Transport errors, HTTP statuses other
than 200 and "SandboxError" are retried with exponential backoff; a cell's own failure is not.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from t3rl_core import outside_json
from t3rl_core.backoff import backoff_delay
from t3rl_core.counts import counted
from t3rl_core.sandbox.base import Sandbox, SandboxResult, SandboxStatus
from t3rl_core.sandbox.config import SandboxFusionConfig
from t3rl_core.secret import mask_text

if TYPE_CHECKING:
    import aiohttp


class _Retryable(Exception):
    """An attempt failed for a reason that is not the cell's: try again."""


class SandboxFusionClient(Sandbox):
    """At most `max_concurrency` requests in flight; `max_attempts` tries per cell."""

    def __init__(self, config: SandboxFusionConfig) -> None:
        self.config = config
        self.endpoint = config.url.rstrip("/") + "/run_code"
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._session: aiohttp.ClientSession | None = None

    async def run(self, code: str) -> SandboxResult:
        async with self._slots:
            started = time.monotonic()
            failures: list[str] = []
            for attempt in range(self.config.max_attempts):
                if attempt:
                    await asyncio.sleep(
                        backoff_delay(attempt, self.config.backoff_initial_s, self.config.backoff_max_s)
                    )
                try:
                    body = await self._post(code)
                except _Retryable as err:
                    failures.append(str(err))
                    continue
                return _to_result(body, time.monotonic() - started)
            return SandboxResult(
                status="sandbox_error",
                stdout="",
                stderr="",
                exit_code=None,
                duration_s=time.monotonic() - started,
                error=mask_text(
                    f"SandboxFusion at {self.endpoint} failed {counted(len(failures), 'time')}; last: "
                    f"{failures[-1]}"
                ),
            )

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def request(self, code: str) -> dict[str, Any]:
        c = self.config
        return {
            "code": code,
            "language": c.language,
            "run_timeout": c.run_timeout_s,
            "compile_timeout": c.compile_timeout_s,
            "stdin": None,
            "files": {},
            "fetch_files": [],
        }

    async def _post(self, code: str) -> dict[str, Any]:
        import aiohttp

        c = self.config
        if self._session is None:
            self._session = aiohttp.ClientSession()
        timeout = c.request_timeout_s or c.run_timeout_s + c.compile_timeout_s + 10
        try:
            async with self._session.post(
                self.endpoint, json=self.request(code), timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                text = await response.text()
                if response.status != 200:
                    raise _Retryable(f"HTTP {response.status}: {text[:200]}")
                body = outside_json.loads(text, f"POST {self.endpoint}'s answer")
        except (aiohttp.ClientError, TimeoutError) as err:
            raise _Retryable(f"{type(err).__name__}: {err}") from err
        except ValueError as err:
            raise _Retryable(f"response is not JSON: {err}") from err
        if not isinstance(body, dict):
            raise _Retryable(f"response is not a JSON object: {str(body)[:200]}")
        if body.get("status") == "SandboxError":
            raise _Retryable(f"SandboxError: {body.get('message') or 'no message'}")
        return body


def _to_result(body: dict[str, Any], duration_s: float) -> SandboxResult:
    run = body.get("run_result") or {}
    compiled = body.get("compile_result") or {}
    exit_code = run.get("return_code")
    status, error = _verdict(body, run, compiled, exit_code)
    stdout, stderr = run.get("stdout") or "", run.get("stderr") or compiled.get("stderr") or ""
    return SandboxResult(status, stdout, stderr, exit_code, duration_s, error)


def _verdict(
    body: dict[str, Any], run: dict[str, Any], compiled: dict[str, Any], exit_code: int | None
) -> tuple[SandboxStatus, str | None]:
    status = body.get("status")
    if status == "Success":
        return "success", None
    if status != "Failed":
        return "sandbox_error", f"unknown SandboxFusion status {status!r}"
    if "TimeLimitExceeded" in (run.get("status"), compiled.get("status")):
        return "timeout", "SandboxFusion time limit exceeded"
    if body.get("message"):
        return "error", str(body["message"])
    return "error", f"exit code {exit_code}" if exit_code is not None else "no run result"
