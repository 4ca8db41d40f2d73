"""JSON from outside nested past what t3rl reads, at the places it comes in: an OpenEnv server's answer
over its session, a request to t3rl's own engine server, an SGLang server's answer, an OpenEnv
server's /schema. Each is refused with a typed error (the episode's environment failure, HTTP 400,
the engine's BadResponse, the world unavailable) naming where it came from and the limit; before,
the OpenEnv client raised RecursionError in Python's words and the engine server answered 500."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from t3rl_core.engines.base import Engine, Generation, SamplingParams
from t3rl_core.engines.serve import GenerateServer
from t3rl_core.engines.sglang_http import BadResponse, parse_generation
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.server import EnvServer, EnvServerError
from t3rl_core.outside_json import MAX_DEPTH
from tests.envs.test_hub_kinds_three import play
from tests.support.body_server import answering

# openenv (imported by t3rl's openenv.boundary) is imported in the tests that use it: ~1.5 s per process,
# and every xdist worker collects this module.
LIMIT = f"nested at most {MAX_DEPTH} levels (t3rl_core.outside_json.MAX_DEPTH)"


def nested(levels: int, opener: str = "[") -> str:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '"a": 1' if opener == "{" else "1"
    return (opener if opener == "[" else '{"a": ') * (levels - 1) + opener + inner + closer * levels


def deep_answer(levels: int, opener: str = "[") -> str:
    observation = '{"board": ' + nested(levels, opener) + "}"
    return (
        '{"type": "observation", "data": {"observation": ' + observation + ', "reward": 1.0, "done": true}}'
    )


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5_000, 100_000])
@pytest.mark.parametrize("opener", ["[", "{"])
def test_an_openenv_answer_nested_past_the_limit_fails_the_episode_naming_the_server(
    levels: int, opener: str
) -> None:
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    failure = play(deep_answer(levels, opener))
    assert isinstance(failure, OpenEnvProtocolError), repr(failure)
    text = str(failure)
    assert "the OpenEnv server at http://127.0.0.1:" in text and "answered step with JSON" in text
    assert LIMIT in text and "recursion" not in text


def test_an_openenv_answer_within_the_limit_is_read_as_the_world_checks_it() -> None:
    """Nested within t3rl's JSON limit, the answer is read; the world's own result limit (64) still
    refuses the observation as the environment's failure."""
    from t3rl_core.envs.openenv.boundary import OpenEnvProtocolError

    failure = play(deep_answer(MAX_DEPTH - 8))
    assert isinstance(failure, OpenEnvProtocolError) and "MAX_NESTING" in str(failure), failure
    step, outcome = play(deep_answer(3))
    assert step.done and outcome["reward"] == 1.0


class _Echo(Engine):
    async def generate(self, input_ids: list[int], sampling: SamplingParams, context=None) -> Generation:  # type: ignore[no-untyped-def,override]
        return Generation(token_ids=[1], log_probs=[0.0], finish_reason="stop")


def _post(body: bytes) -> tuple[int, str, int]:
    """POST `body` to a fresh engine server, then a good request: (status, text, the good one's status)."""

    async def go() -> tuple[int, str, int]:
        server = GenerateServer(_Echo())
        url = await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                async with session.post(f"{url}/generate", data=body) as response:
                    status, text = response.status, await response.text()
                async with session.post(f"{url}/generate", json={"input_ids": [1, 2]}) as response:
                    after = response.status
            return status, text, after
        finally:
            await server.stop()

    return asyncio.run(go())


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
def test_the_engine_server_refuses_a_nested_request_with_a_400_and_keeps_serving(levels: int) -> None:
    body = ('{"input_ids": [1], "sampling_params": ' + nested(levels, "{") + "}").encode()
    status, text, after = _post(body)
    assert status == 400, (status, text[:300])
    assert "POST /generate" in text and LIMIT in text and "recursion" not in text
    assert after == 200


def test_the_engine_server_refuses_what_is_no_json_with_a_400() -> None:
    status, text, after = _post(b"<html>")
    assert (status, after) == (400, 200) and "POST /generate" in text


def test_an_sglang_answer_past_the_limit_is_a_bad_response_naming_the_limit() -> None:
    body = ('{"text": "", "output_ids": [], "meta_info": ' + nested(MAX_DEPTH + 1, "{") + "}").encode()
    with pytest.raises(BadResponse, match=r"/generate.*" + LIMIT.replace("(", r"\(").replace(")", r"\)")):
        parse_generation(body)


def test_an_openenv_schema_nested_past_the_limit_is_the_world_unavailable() -> None:
    body = ('{"action": {"type": "object", "x": ' + nested(100_000) + "}}").encode()
    with answering(body) as url, pytest.raises(EnvServerError, match=r"/schema") as caught:
        EnvServer(OpenEnvEnvConfig(url=url)).schema()
    assert LIMIT in str(caught.value)
