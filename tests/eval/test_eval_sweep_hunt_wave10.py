"""Hunt wave ten (helper 197): `t3rl eval` on its own, and searches.

- A server at `--url` whose `GET /get_model_info` answers something that is not SGLang's model info
  (a list, an object without `model_path`, a `model_path` that is no text) is refused by the health
  check, as a server that is not SGLang, before any episode: `{"model_path": 5}` passed the check and
  crashed the eval's record with "t3rl failed unexpectedly: TypeError". The answer's shape is declared
  once (`t3rl_core.engines.sglang_http.ServedModelInfo`); the cases are built from that declaration.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from t3rl_core.engines.base import EngineUnavailable
from t3rl_core.engines.config import SGLangEngineConfig
from t3rl_core.engines.sglang_http import ServedModelInfo, SGLangEngine
from tests.support.body_server import answering


def _check(url: str) -> dict[str, Any]:
    engine = SGLangEngine(SGLangEngineConfig(url=url, health_timeout_s=5.0, max_attempts=1))

    async def run() -> dict[str, Any]:
        try:
            return await engine.check()
        finally:
            await engine.aclose()

    return asyncio.run(run())


_GOOD = {"model_path": "/models/m", "tokenizer_path": "/models/m", "is_generation": True}
# A value of every JSON type: each field declared a text refuses all but its own.
_JSON_VALUES: list[Any] = [5, 1.5, True, None, [], {}, ["/models/m"], ""]


def _bad_answers() -> Iterator[Any]:
    yield from ([], [1, 2], "model", 5, None)  # no JSON object at all
    for name in ServedModelInfo.model_fields:
        yield {k: v for k, v in _GOOD.items() if k != name}  # the declared field missing
        for value in _JSON_VALUES:
            yield {**_GOOD, name: value}


@pytest.mark.parametrize("answer", list(_bad_answers()), ids=repr)
def test_a_model_info_that_is_not_sglangs_fails_the_health_check(answer: Any) -> None:
    # the server answers /health and /get_model_info alike: /health reads only the status
    with answering(json.dumps(answer).encode()) as url, pytest.raises(EngineUnavailable) as refused:
        _check(url)
    message = str(refused.value)
    assert "not SGLang's model info" in message and "eval.engine.url / --url" in message
    assert "Traceback" not in message


def test_sglangs_model_info_passes_with_every_key_recorded() -> None:
    answer = {**_GOOD, "max_total_num_tokens": 4096, "weight_version": "7"}
    with answering(json.dumps(answer).encode()) as url:
        info = _check(url)
    assert info["served_model"] == "/models/m" and info["model_info"] == answer
