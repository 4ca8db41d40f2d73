"""A scripted OpenAI-compatible chat server on 127.0.0.1: verifiers' own client talks to it, so the
library's own rollout of a script gives the reference transcript and reward."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web

from tests.support.scripted_sglang import serving


def reply(content: str | None = None, calls: Sequence[tuple[str, dict[str, Any]]] = ()) -> dict[str, Any]:
    """One scripted assistant message: text, tool calls, or both."""
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    return {"role": "assistant", "content": content, **({"tool_calls": tool_calls} if tool_calls else {})}


@asynccontextmanager
async def scripted_server(script: Sequence[dict[str, Any]]) -> AsyncIterator[str]:
    """Serve `script` one message per request; yields the base URL (…/v1)."""
    pending = list(script)

    async def complete(request: web.Request) -> web.Response:
        await request.json()
        message = pending.pop(0)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        body = {
            "id": "standin", "object": "chat.completion", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage,
        }  # fmt: skip
        return web.json_response(body)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", complete)
    async with serving(app) as port:
        yield f"http://127.0.0.1:{port}/v1"
