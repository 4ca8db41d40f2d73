"""An in-process server speaking SGLang's `/generate` that plays a script of texts: each request gets
the next text as the chat family's model emits it (turn prefix, tokens, turn-ending token), with
log-prob -0.5 per token. For hook tests that need slime's router without a model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import yaml
from aiohttp import web

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.reference import as_model_output
from t3rl_core.hooks import slime as hooks


@asynccontextmanager
async def serving(app: web.Application) -> AsyncIterator[int]:
    """`app` on 127.0.0.1 at a free port while the context lasts; yields the port."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


@asynccontextmanager
async def scripted_sglang(
    chat: ChatFormat, script: Sequence[str], calls_tools: Callable[[str], bool]
) -> AsyncIterator[tuple[str, int]]:
    """Serve the script's texts in order; yields (host, port)."""
    pending = list(script)

    async def generate(request: web.Request) -> web.Response:
        await request.json()
        text = pending.pop(0)
        output = as_model_output(chat, text, calls_tools=calls_tools(text), sampling=SamplingParams())
        entries = [[-0.5, token, None] for token in output.token_ids]
        meta = {"finish_reason": {"type": output.finish_reason}, "output_token_logprobs": entries}
        return web.json_response({"text": text, "meta_info": meta})

    app = web.Application()
    app.router.add_post("/generate", generate)
    async with serving(app) as port:
        yield "127.0.0.1", port


def generate_with_router(
    runtime: RuntimeConfig,
    chat: ChatFormat,
    script: Sequence[str],
    sample: Any,
    calls_tools: Callable[[str], bool] = lambda text: "<tool_call>" in text,
) -> Any:
    """slime's generate hook on `sample`, the runtime config set on `args` as slime sets it from
    --custom-config-path, the scripted server as slime's router."""

    async def play() -> Any:
        async with scripted_sglang(chat, script, calls_tools) as (host, port):
            args = SimpleNamespace(sglang_router_ip=host, sglang_router_port=port, partial_rollout=False)
            for key, value in yaml.safe_load(runtime.to_yaml()).items():
                setattr(args, key, value)
            try:
                return await hooks.generate(args, sample, {"temperature": 1.0, "max_new_tokens": 8192})
            finally:
                await hooks.close_runners()

    return asyncio.run(play())
