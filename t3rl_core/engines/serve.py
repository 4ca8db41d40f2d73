"""A small HTTP server speaking SGLang's native protocol, backed by any t3rl engine.

Endpoints: `POST /generate` (input_ids mode, `return_logprob`; meta_info reports `cached_tokens` from a
token trie of earlier requests, as a prefix cache would, and a `weight_version`), `GET /health`,
`GET /health_generate`, `GET /get_model_info`. Tests use it to put real HTTP between the SGLang client
engine and a model; the quickstart serves the tiny CPU model with it:

    python -m t3rl_core.engines.serve --model DIR --port 30000 [--chat-template qwen3]
"""

from __future__ import annotations

import argparse
import uuid
from typing import TYPE_CHECKING, Any

from t3rl_core import outside_json
from t3rl_core.engines.base import Engine, Generation, SamplingParams

if TYPE_CHECKING:
    from aiohttp import web

    from t3rl_core.chat.format import ChatFormat

# SGLang's default max_new_tokens when a request gives none.
_DEFAULT_MAX_NEW_TOKENS = 128


def sampling_from_request(params: dict[str, Any]) -> SamplingParams:
    """SGLang `sampling_params` → SamplingParams (unknown keys are ignored, as SGLang ignores unset ones)."""
    stop = params.get("stop") or ()
    return SamplingParams(
        temperature=float(params.get("temperature", 1.0)),
        top_p=float(params.get("top_p", 1.0)),
        top_k=int(params.get("top_k", -1)),
        max_new_tokens=int(params.get("max_new_tokens", _DEFAULT_MAX_NEW_TOKENS)),
        stop=(stop,) if isinstance(stop, str) else tuple(stop),
        stop_token_ids=tuple(int(token) for token in params.get("stop_token_ids") or ()),
        seed=params.get("sampling_seed"),
    )


class PrefixCache:
    """The prompt tokens a prefix cache could serve: every earlier request's prompt and output as a
    token trie, cleared once it holds `max_nodes` tokens (a full cache evicts)."""

    def __init__(self, max_nodes: int = 1_000_000) -> None:
        self.max_nodes = max_nodes
        self._root: dict[int, dict] = {}
        self._nodes = 0

    def cached(self, token_ids: list[int]) -> int:
        """How many leading tokens of `token_ids` an earlier request already computed."""
        node, length = self._root, 0
        for token in token_ids:
            child = node.get(token)
            if child is None:
                break
            node, length = child, length + 1
        return length

    def add(self, token_ids: list[int]) -> None:
        if self._nodes + len(token_ids) > self.max_nodes:
            self._root, self._nodes = {}, 0
        node = self._root
        for token in token_ids:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                self._nodes += 1
            node = child


def generation_response(
    generation: Generation,
    prompt_tokens: int,
    text: str,
    with_logprobs: bool,
    cached_tokens: int = 0,
    weight_version: str = "default",
) -> dict[str, Any]:
    """A `/generate` response body in SGLang's shape."""
    finish: dict[str, Any] = {"type": generation.finish_reason}
    if generation.finish_reason == "stop" and generation.token_ids:
        finish["matched"] = generation.token_ids[-1]
    elif generation.finish_reason == "length":
        finish["length"] = len(generation.token_ids)
    elif generation.finish_reason == "abort":
        finish["message"] = generation.error or "aborted"
    meta: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "finish_reason": finish,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": len(generation.token_ids),
        "cached_tokens": cached_tokens,
        "weight_version": weight_version,
    }
    if with_logprobs:
        meta["output_token_logprobs"] = [
            [log_prob, token, None]
            for log_prob, token in zip(generation.log_probs, generation.token_ids, strict=True)
        ]
    return {"text": text, "output_ids": generation.token_ids, "meta_info": meta}


class GenerateServer:
    """SGLang's HTTP surface over an Engine."""

    def __init__(
        self,
        engine: Engine,
        *,
        model_path: str = "",
        chat: ChatFormat | None = None,
        weight_version: str = "default",
    ) -> None:
        self.engine, self.model_path, self.chat = engine, model_path, chat
        self.weight_version = weight_version
        self.prefix_cache = PrefixCache()
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        from aiohttp import web

        app = web.Application(client_max_size=outside_json.MAX_BYTES)
        app.router.add_post("/generate", self._generate)
        app.router.add_get("/health", self._health)
        app.router.add_get("/health_generate", self._health_generate)
        app.router.add_get("/get_model_info", self._model_info)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in the running event loop; returns the base URL (port 0 picks a free port)."""
        from aiohttp import web

        self._runner = web.AppRunner(self.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://{host}:{bound}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _generate(self, request: web.Request) -> web.Response:
        from aiohttp import web

        try:
            # Read under t3rl's JSON limit: a body nested past Python's recursion was a RecursionError,
            # aiohttp's 500 (outside_json's refusal is a ValueError, this 400).
            body = outside_json.loads(await request.read(), "the request's JSON")
            input_ids = [int(token) for token in body["input_ids"]]
            sampling = sampling_from_request(body.get("sampling_params") or {})
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response(
                {"error": f"bad request to POST /generate: {type(exc).__name__}: {exc}"}, status=400
            )
        cached = self.prefix_cache.cached(input_ids)
        generation = await self.engine.generate(input_ids, sampling)
        self.prefix_cache.add(input_ids + generation.token_ids)
        text = self.chat.decode(generation.token_ids) if self.chat is not None else ""
        response = generation_response(
            generation,
            len(input_ids),
            text,
            bool(body.get("return_logprob")),
            cached_tokens=cached,
            weight_version=self.weight_version,
        )
        return web.json_response(response)

    async def _health(self, request: web.Request) -> web.Response:
        from aiohttp import web

        return web.Response(text="OK")

    async def _health_generate(self, request: web.Request) -> web.Response:
        from aiohttp import web

        probe = self.chat.encode("ping") if self.chat is not None else [0]
        generation = await self.engine.generate(probe, SamplingParams(max_new_tokens=1, temperature=0.0))
        if generation.finish_reason == "abort":
            return web.Response(status=503, text=generation.error or "generation failed")
        return web.Response(text="OK")

    async def _model_info(self, request: web.Request) -> web.Response:
        from aiohttp import web

        return web.json_response(
            {"model_path": self.model_path, "tokenizer_path": self.model_path, "is_generation": True}
        )


def main(argv: list[str] | None = None) -> None:
    from aiohttp import web

    from t3rl_core.chat.format import ChatFormat
    from t3rl_core.engines.config import HFEngineConfig
    from t3rl_core.engines.hf import HFEngine
    from t3rl_core.eval.config import ServerConfig

    parser = argparse.ArgumentParser(
        prog="python -m t3rl_core.engines.serve", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--model", required=True, help="local HF model directory (weights + tokenizer)")
    # The eval stage's server defaults (eval.server.host/port): this serves in its place.
    server = ServerConfig.model_fields
    parser.add_argument("--host", default=server["host"].default)
    parser.add_argument("--port", type=int, default=server["port"].default)
    parser.add_argument(
        "--chat-template", help="a shipped chat template name, when the tokenizer's own is not wanted"
    )
    parser.add_argument("--concurrency", type=int, default=1, help="generations running at once")
    parser.add_argument("--weight-version", default="default", help="reported in meta_info, as SGLang's")
    args = parser.parse_args(argv)
    chat = ChatFormat.from_pretrained(args.model, args.chat_template)
    engine = HFEngine(HFEngineConfig(model_path=args.model, concurrency=args.concurrency), chat=chat)
    server = GenerateServer(engine, model_path=args.model, chat=chat, weight_version=args.weight_version)
    web.run_app(server.app(), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
