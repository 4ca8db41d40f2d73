"""The SGLang HTTP engine against a local server that misbehaves on purpose."""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from t3rl_core.backoff import backoff_delay
from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines import sglang_http
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.engines.sglang_http import BadResponse, SGLangEngine, parse_generation
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import run_episode
from tests.rollout.fakes import TOOLS, ToyEnv, task

OK_BODY = {
    "text": "abc",
    "meta_info": {
        "finish_reason": {"type": "stop", "matched": 7},
        "output_token_logprobs": [[-0.1, 5, None], [-0.2, 6, None], [-0.3, 7, None]],
    },
}


class FaultyServer:
    """Answers /generate per a script of behaviours (the last one repeats)."""

    def __init__(self, script: list[str], delay: float = 0.0, body: dict | None = None) -> None:
        self.script, self.delay, self.body = script, delay, body or OK_BODY
        self.requests: list[dict[str, Any]] = []
        self.in_flight = self.max_in_flight = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(await request.json())
        mode = self.script[min(len(self.requests), len(self.script)) - 1]
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return await self._respond(mode, request)
        finally:
            self.in_flight -= 1

    async def _respond(self, mode: str, request: web.Request) -> web.StreamResponse:
        if mode == "ok":
            return web.json_response(self.body)
        if mode in ("500", "400"):
            return web.Response(status=int(mode), text=f"boom {mode}")
        if mode == "hang":
            await asyncio.sleep(30)
        if mode == "drop":
            request.transport.close()
            return web.Response()
        if mode == "truncate":
            return web.Response(text=json.dumps(self.body)[:25], content_type="application/json")
        if mode == "short_body":
            response = web.StreamResponse(headers={"Content-Length": "1000"})
            await response.prepare(request)
            await response.write(b'{"meta_info": {')
            request.transport.close()
            return response
        if mode == "abort":
            body = {"meta_info": {"finish_reason": {"type": "abort", "message": "weights updating"}}}
            body["meta_info"]["output_token_logprobs"] = []
            return web.json_response(body)
        raise AssertionError(mode)


@asynccontextmanager
async def serving(server: FaultyServer):
    app = web.Application()
    app.router.add_post("/generate", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    finally:
        await runner.cleanup()


def engine_for(url: str, **config: Any) -> SGLangEngine:
    settings = {"timeout_s": 0.5, "max_attempts": 3, "backoff_s": 0.01, **config}
    return SGLangEngine(SGLangEngineConfig(url=url, **settings))


async def generate(server: FaultyServer, **config: Any):
    async with serving(server) as url:
        engine = engine_for(url, **config)
        try:
            return await engine.generate(
                [1, 2, 3], SamplingParams(stop=("</code>",), stop_token_ids=(7,), seed=4)
            )
        finally:
            await engine.aclose()


def test_a_good_response_and_the_request_shape() -> None:
    server = FaultyServer(["ok"])
    generation = asyncio.run(generate(server))
    assert (generation.token_ids, generation.log_probs, generation.finish_reason) == (
        [5, 6, 7],
        [-0.1, -0.2, -0.3],
        "stop",
    )
    request = server.requests[0]
    assert request["input_ids"] == [1, 2, 3] and request["return_logprob"] is True
    params = request["sampling_params"]
    assert (params["stop"], params["stop_token_ids"], params["no_stop_trim"], params["sampling_seed"]) == (
        ["</code>"],
        [7],
        True,
        4,
    )


@pytest.mark.parametrize("fault", ["500", "drop", "truncate", "short_body", "hang"])
def test_transient_faults_are_retried(fault: str) -> None:
    server = FaultyServer([fault, "ok"])
    generation = asyncio.run(generate(server, timeout_s=0.3))
    assert generation.finish_reason == "stop" and generation.token_ids == [5, 6, 7]
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("500", "HTTP 500"),
        ("drop", "ServerDisconnectedError"),
        ("truncate", "invalid /generate response"),
        ("short_body", "ClientPayloadError"),
        ("hang", "TimeoutError"),
    ],
)
def test_persistent_faults_abort_after_all_attempts(fault: str, message: str, monkeypatch) -> None:
    waits: list[tuple[int, float]] = []

    def recorded(attempt: int, initial_s: float) -> float:
        waits.append((attempt, initial_s))
        return backoff_delay(attempt, initial_s)

    monkeypatch.setattr(sglang_http, "backoff_delay", recorded)
    server = FaultyServer([fault])
    generation = asyncio.run(generate(server, timeout_s=0.2, max_attempts=3, backoff_s=0.05))
    assert generation.finish_reason == "abort" and generation.token_ids == []
    assert message in generation.error and "failed 3 time(s)" in generation.error
    assert len(server.requests) == 3
    # A jittered exponential back-off before each retry (not before the first attempt).
    assert waits == [(1, 0.05), (2, 0.05)]


def test_client_errors_and_server_aborts_are_not_retried() -> None:
    server = FaultyServer(["400"])
    generation = asyncio.run(generate(server))
    assert (generation.finish_reason, len(server.requests)) == ("abort", 1)
    assert "HTTP 400" in generation.error
    server = FaultyServer(["abort"])
    generation = asyncio.run(generate(server))
    assert (generation.finish_reason, len(server.requests)) == ("abort", 1)
    assert "weights updating" in generation.error


def test_concurrency_is_bounded() -> None:
    server = FaultyServer(["ok"], delay=0.05)

    async def many() -> list:
        async with serving(server) as url:
            engine = engine_for(url, concurrency=3)
            try:
                return await asyncio.gather(*(engine.generate([1], SamplingParams()) for _ in range(12)))
            finally:
                await engine.aclose()

    assert all(g.finish_reason == "stop" for g in asyncio.run(many()))
    assert server.max_in_flight == 3


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"meta_info": {"finish_reason": null, "output_token_logprobs": []}}',
        b'{"meta_info": {"finish_reason": {"type": "stop"}, "output_token_logprobs": [[null, 3, null]]}}',
        b'{"meta_info": {"finish_reason": {"type": "stop"}}}',
        b"[]",
    ],
)
def test_malformed_bodies_are_rejected(body: bytes) -> None:
    with pytest.raises(BadResponse):
        parse_generation(body)


def test_missing_url_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"engine\.url"):
        SGLangEngine(SGLangEngineConfig())


def _episode(chat: ChatFormat, script: list[str], body: dict) -> Any:
    async def play():
        async with serving(FaultyServer(script, body=body)) as url:
            engine = engine_for(url, timeout_s=0.2, max_attempts=2)
            env = ToyEnv()
            parser = ToolCallActionParser(ParsersConfig(tool_call_parser="qwen25"), TOOLS)
            result = await run_episode(
                task(),
                env=env,
                engine=engine,
                chat=chat,
                parser=parser,
                sampling=SamplingParams(),
                limits=RolloutConfig(),
            )
            await engine.aclose()
            return result, env

    return asyncio.run(play())


def _body(chat: ChatFormat, text: str, finish: str) -> dict:
    ids = chat.encode(text) + ([chat.stop_token_ids[0]] if finish == "stop" else [])
    return {
        "meta_info": {
            "finish_reason": {"type": finish},
            "output_token_logprobs": [[-0.5, t, None] for t in ids],
        }
    }


def test_episode_over_http_ends_aborted_when_the_server_dies(qwen_chat: ChatFormat) -> None:
    call = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
    result, env = _episode(qwen_chat, ["ok", "500"], _body(qwen_chat, call, "stop"))
    assert result.status == "aborted" and "HTTP 500" in result.error
    assert result.num_model_calls == 1 and len(env.actions) == 1  # the failed call answered nothing
    assert len(result.response_ids) == len(result.loss_mask) == len(result.log_probs)
    assert env.closed


def test_episode_over_http_truncates_on_length(qwen_chat: ChatFormat) -> None:
    result, _ = _episode(qwen_chat, ["ok"], _body(qwen_chat, "The sum is", "length"))
    assert result.status == "truncated"
    assert qwen_chat.decode(result.response_ids).endswith("The sum is<|im_end|>\n")
