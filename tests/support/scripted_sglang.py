"""An in-process server speaking SGLang's `/generate` that plays a script of texts: each request gets
the next text as the chat family's model emits it (turn prefix, tokens, turn-ending token), with
log-prob -0.5 per token. For hook tests that need slime's router without a model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

from aiohttp import web

from t3rl_core.chat.format import ChatFormat
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.reference import as_model_output


@asynccontextmanager
async def scripted_sglang(
    chat: ChatFormat, script: Callable[[list[int]], str] | Sequence[str], calls_tools: Callable[[str], bool]
) -> AsyncIterator[tuple[str, int]]:
    """Serve the script (texts in order, or a function of the request's input ids); yields (host, port)."""
    pending = list(script) if not callable(script) else []

    async def generate(request: web.Request) -> web.Response:
        body = await request.json()
        text = script(body["input_ids"]) if callable(script) else pending.pop(0)
        output = as_model_output(chat, text, calls_tools=calls_tools(text), sampling=SamplingParams())
        entries = [[-0.5, token, None] for token in output.token_ids]
        meta = {"finish_reason": {"type": output.finish_reason}, "output_token_logprobs": entries}
        return web.json_response({"text": text, "meta_info": meta})

    app = web.Application()
    app.router.add_post("/generate", generate)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield "127.0.0.1", site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()
