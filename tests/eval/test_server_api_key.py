"""`eval.server.api_key`: the SGLang server the eval starts gets its key, by reference; the eval engine
and the health check send it as a Bearer token; a missing or wrong key fails loudly, naming the fix."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from t3rl_core.engines.base import EngineUnavailable, SamplingParams
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.engines.sglang_http import SGLangEngine
from t3rl_core.eval.config import EvalConfig, ServerConfig
from t3rl_core.eval.server import SGLangServer
from t3rl_core.secret import SecretResolutionError
from tests.support.tiny_stack import free_port

KEYED = (sys.executable, str(Path(__file__).resolve().parents[1] / "support" / "keyed_sglang.py"))
KEY = "sk-planted-server-key-3f9a"


def _server(tmp_path: Path, reference: str | None) -> SGLangServer:
    config = ServerConfig(port=free_port(), startup_timeout_s=20.0, api_key=reference)
    return SGLangServer(
        tmp_path / "model", tp=1, tool_call_parser="qwen25", config=config, launch=KEYED,
        log_path=tmp_path / "server.log",
    )  # fmt: skip


async def _use(engine: SGLangEngine) -> tuple[dict, str]:
    try:
        info = await engine.check()
        generation = await engine.generate([1, 2], SamplingParams())
        return info, generation.finish_reason
    finally:
        await engine.aclose()


def _engine(url: str, server_key: str | None, engine_key: str | None = None) -> SGLangEngine:
    engine = SGLangEngineConfig(url=url, api_key=engine_key, health_timeout_s=5.0, max_attempts=1)
    config = EvalConfig(engine=engine, server=ServerConfig(api_key=server_key)).with_server_key()
    return SGLangEngine(config.engine)  # type: ignore[arg-type]


def test_the_started_server_gets_the_key_and_the_engine_sends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_SERVER_KEY", KEY)
    server = _server(tmp_path, "env:EVAL_SERVER_KEY")
    # What is shown of the server never holds the value.
    assert KEY not in " ".join(server.command())
    with server:  # its /health wants the key too: the wait for it sent the key
        info, finish = asyncio.run(_use(_engine(server.url, "env:EVAL_SERVER_KEY")))
        assert info["served_model"] == str(tmp_path / "model") and finish == "stop"
        # A key of the engine's own wins over the server's: here a wrong one, refused loudly.
        monkeypatch.setenv("OTHER_KEY", "sk-not-the-servers-key")
        with pytest.raises(EngineUnavailable) as refused:
            asyncio.run(_use(_engine(server.url, "env:EVAL_SERVER_KEY", "env:OTHER_KEY")))
        assert "HTTP 401" in str(refused.value) and "env:OTHER_KEY was refused" in str(refused.value)
        assert "eval.server.api_key" in str(refused.value)
        # No key at all: the same loud refusal, saying none was sent.
        with pytest.raises(EngineUnavailable, match="no key was sent"):
            asyncio.run(_use(_engine(server.url, None)))
    # The server logs its arguments, key included (as SGLang does): the log holds the mask instead.
    log = (tmp_path / "server.log").read_text()
    assert KEY not in log and "api_key='***'" in log


def test_a_key_read_from_a_file_reaches_the_server(tmp_path: Path) -> None:
    (tmp_path / "key").write_text(KEY + "\n")
    with _server(tmp_path, f"file:{tmp_path / 'key'}") as server:
        _, finish = asyncio.run(_use(_engine(server.url, f"file:{tmp_path / 'key'}")))
        assert finish == "stop"


def test_a_generation_refused_for_its_key_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_SERVER_KEY", KEY)
    monkeypatch.setenv("OTHER_KEY", "sk-not-the-servers-key")
    with _server(tmp_path, "env:EVAL_SERVER_KEY") as server:
        engine = _engine(server.url, "env:OTHER_KEY")
        generation = asyncio.run(engine.generate([1], SamplingParams()))
        asyncio.run(engine.aclose())
    assert generation.finish_reason == "abort" and "refused POST /generate with HTTP 401" in (
        generation.error or ""
    )


def test_an_unset_or_empty_key_never_starts_an_open_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVAL_SERVER_KEY", raising=False)
    with pytest.raises(SecretResolutionError, match="EVAL_SERVER_KEY is not set"):
        _server(tmp_path, "env:EVAL_SERVER_KEY").start()
    (tmp_path / "empty").write_text("\n")
    from t3rl_core.eval.server import ServerStartError

    with pytest.raises(ServerStartError, match="is empty"):
        _server(tmp_path, f"file:{tmp_path / 'empty'}").start()


def test_a_literal_key_is_refused_by_the_config() -> None:
    with pytest.raises(ValueError, match="never the credential itself") as refused:
        ServerConfig(api_key=KEY)
    assert KEY not in str(refused.value)
