"""The transformers CPU engine on the tiny offline model, and SGLang's protocol served over it."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import HFEngineConfig, SGLangEngineConfig
from t3rl_core.engines.hf import HFEngine
from t3rl_core.engines.serve import GenerateServer
from t3rl_core.engines.sglang_http import SGLangEngine
from tests.support.tiny_stack import one_thread_env, shared_tiny_stack


@pytest.fixture(scope="module")
def model_dir() -> Path:
    """The run's shared tiny Qwen3 model (tests/support/tiny_stack.py; read only here): built once for
    the suite's modules that serve or load it, not once more here (~2.5 s of CPU a build)."""
    return shared_tiny_stack()[1]


@pytest.fixture(scope="module")
def chat(model_dir: Path) -> ChatFormat:
    return ChatFormat.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def engine(model_dir: Path, chat: ChatFormat) -> HFEngine:
    return HFEngine(HFEngineConfig(model_path=str(model_dir)), chat=chat)


def prompt(chat: ChatFormat) -> list[int]:
    return chat.prompt_ids([{"role": "user", "content": "What is 2 + 2?"}])


def test_sampled_tokens_come_with_the_models_log_probs(engine: HFEngine, chat: ChatFormat) -> None:
    import torch

    ids = prompt(chat)
    generation = asyncio.run(engine.generate(ids, SamplingParams(max_new_tokens=12, seed=7)))
    assert generation.finish_reason == "length"
    assert len(generation.token_ids) == len(generation.log_probs) == 12
    # the same log-probs from one full forward pass over prompt + sample
    with torch.inference_mode():
        logits = engine._model(input_ids=torch.tensor([ids + generation.token_ids])).logits[0]
    log_probs = torch.log_softmax(logits.float(), dim=-1)
    expected = [float(log_probs[len(ids) - 1 + i, t]) for i, t in enumerate(generation.token_ids)]
    assert generation.log_probs == pytest.approx(expected, abs=1e-4)


def test_seeded_sampling_is_reproducible_and_top_k_1_is_greedy(engine: HFEngine, chat: ChatFormat) -> None:
    ids = prompt(chat)

    def run(**sampling) -> list[int]:
        return asyncio.run(engine.generate(ids, SamplingParams(max_new_tokens=8, **sampling))).token_ids

    assert run(seed=1) == run(seed=1)
    assert run(seed=1) != run(seed=2)
    assert run(temperature=0.0) == run(top_k=1, seed=3) == run(top_p=1e-9, seed=4)


def test_stops_on_stop_tokens_and_stop_strings(engine: HFEngine, chat: ChatFormat) -> None:
    ids = prompt(chat)
    greedy = asyncio.run(engine.generate(ids, SamplingParams(max_new_tokens=10, temperature=0.0)))
    stop_token = greedy.token_ids[3]
    first = greedy.token_ids.index(stop_token)
    stopped = asyncio.run(
        engine.generate(ids, SamplingParams(max_new_tokens=10, temperature=0.0, stop_token_ids=(stop_token,)))
    )
    assert (stopped.finish_reason, stopped.token_ids) == ("stop", greedy.token_ids[: first + 1])
    text = chat.decode(greedy.token_ids[:5])
    stop_string = text[-2:]
    by_string = asyncio.run(
        engine.generate(ids, SamplingParams(max_new_tokens=10, temperature=0.0, stop=(stop_string,)))
    )
    assert by_string.finish_reason == "stop"
    assert stop_string in chat.decode(by_string.token_ids)
    assert len(by_string.token_ids) <= 5


def test_generation_leaves_the_event_loop_free(engine: HFEngine, chat: ChatFormat) -> None:
    async def race() -> int:
        ticks = 0
        task = asyncio.create_task(engine.generate(prompt(chat), SamplingParams(max_new_tokens=40, seed=0)))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.001)
        assert (await task).finish_reason == "length"
        return ticks

    assert asyncio.run(race()) > 3


def test_sglang_protocol_over_the_tiny_model(engine: HFEngine, chat: ChatFormat, model_dir: Path) -> None:
    async def roundtrip():
        server = GenerateServer(engine, model_path=str(model_dir), chat=chat)
        url = await server.start()
        client = SGLangEngine(SGLangEngineConfig(url=url, timeout_s=60))
        try:
            sampling = SamplingParams(max_new_tokens=6, seed=11, stop_token_ids=chat.stop_token_ids)
            over_http = await client.generate(prompt(chat), sampling)
            direct = await engine.generate(prompt(chat), sampling)
            info = await (await client._client()[0].get(f"{url}/get_model_info")).json()
            health = (await client._client()[0].get(f"{url}/health_generate")).status
            bad = (await client._client()[0].post(f"{url}/generate", json={"text": "hi"})).status
            return over_http, direct, info, health, bad
        finally:
            await client.aclose()
            await server.stop()

    over_http, direct, info, health, bad = asyncio.run(roundtrip())
    assert over_http == direct
    assert info == {"model_path": str(model_dir), "tokenizer_path": str(model_dir), "is_generation": True}
    assert (health, bad) == (200, 400)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_serve_cli_serves_the_tiny_model(model_dir: Path, chat: ChatFormat) -> None:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "t3rl_core.engines.serve", "--model", str(model_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=one_thread_env(),
    )
    try:
        # Generous deadlines (a busy machine; nothing here is timed): the 60 s ones failed at load 12.
        deadline = time.monotonic() + 600
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                assert process.poll() is None, process.stdout.read().decode()
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.2)
        payload = {
            "input_ids": prompt(chat),
            "sampling_params": {"max_new_tokens": 4},
            "return_logprob": True,
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/generate",
            json.dumps(payload).encode(),
            {"Content-Type": "application/json"},
        )
        body = json.loads(urllib.request.urlopen(request, timeout=600).read())
        assert body["meta_info"]["finish_reason"]["type"] == "length"
        assert len(body["meta_info"]["output_token_logprobs"]) == 4
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
