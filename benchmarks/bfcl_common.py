"""Shared pieces of the BFCL loop benchmarks: the test rows, a tokenizer trained on them, a runner, and
the conventional loop the t3rl loop is compared with.

The conventional loop ("re-render") does what a text-in loop does: before every model call it renders
the whole conversation with the chat template and tokenizes it. Everything else is the same work as
t3rl's loop: the same env, the same action parser on the model's text, the same reward on the outcome.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from t3rl_core.chat import tiny
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import GenerationContext
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.rewards.base import RewardInput
from t3rl_core.rollout.runner import EpisodeRunner


def batch_arguments(description: str, repeats: int) -> argparse.Namespace:
    """The command line of the 256-episode batch benchmarks: --family, --episodes, --latency, --repeats."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--family", default="qwen3")
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.05, help="engine seconds per call")
    parser.add_argument("--repeats", type=int, default=repeats)
    return parser.parse_args()


def batch_rows(every: list[dict[str, Any]], episodes: int) -> list[dict[str, Any]]:
    """`episodes` rows taken in order from `every`, starting over when it runs out."""
    return [every[i % len(every)] for i in range(episodes)]


def test_rows() -> list[dict[str, Any]]:
    """The 300 BFCL test rows (81 distinct tool lists)."""
    return [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]


def trained_tokenizer(family: str, rows: list[dict[str, Any]], scratch: Path) -> Path:
    """A tiny tokenizer of the family trained on the rows, as the quickstart builds it, so prompts have
    realistic token counts."""
    corpus = scratch / "bfcl.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return tiny.build_tokenizer(family, scratch / "tokenizer", corpus)


def make_runner(family: str, tokenizer_dir: Path, latency_s: float) -> EpisodeRunner:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(tokenizer_dir), "chat_template": family},
            "parsers": {"tool_call_parser": FAMILIES[family].tool_call_parser},
            "rollout": {"max_num_steps": 200, "max_new_tokens": 32768},
        }
    )
    chat = ChatFormat.from_config(runtime.chat)
    engine = ReferenceEngine(ReferenceEngineConfig(latency_s=latency_s), chat=chat)
    return EpisodeRunner.from_runtime(runtime, engine, chat=chat)


async def t3rl_episode(runner: EpisodeRunner, row: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds in all, seconds awaiting the engine, model calls) of one episode through t3rl's loop,
    env construction and scoring included."""
    started = time.perf_counter()
    result, _ = await runner.run(row, "eval")
    total = time.perf_counter() - started
    assert result.status == "completed", (result.status, result.error)
    return total, result.timings["generation_s"], result.num_model_calls


async def rerender_episode(runner: EpisodeRunner, row: dict[str, Any]) -> tuple[float, float, int]:
    """The same episode through the conventional loop: a whole-conversation render + encode per call."""
    started = time.perf_counter()
    chat, engine = runner.chat, runner.engine
    tools = list(row["metadata"]["tools"])
    env = runner.env_factory(row, "eval")
    parser = runner.parser(env.action_format, tools)
    messages = [dict(message) for message in row["prompt"]]
    messages += (await env.reset()).messages
    context = GenerationContext(env=env, messages=messages, tool_call_parser=parser.tool_call_parser)
    sampling = runner.default_sampling()
    generation_s, calls, texts = 0.0, 0, []
    while True:
        ids = chat.render_ids(messages, tools, add_generation_prompt=True)
        called = time.perf_counter()
        generation = await engine.generate(ids, sampling, context)
        generation_s += time.perf_counter() - called
        calls += 1
        text = chat.model_text(generation.token_ids)
        texts.append(text)
        messages.append({"role": "assistant", "content": text})
        transition = await env.step(parser.parse(text))
        messages += transition.messages
        if transition.done:
            break
    runner.reward(RewardInput(outcome=env.outcome(), response="".join(texts), metadata=row["metadata"]))
    await env.aclose()
    return time.perf_counter() - started, generation_s, calls


Play = Callable[[EpisodeRunner, dict[str, Any]], Awaitable[tuple[float, float, int]]]


class EngineCpu:
    """Counts the process CPU spent inside `runner.engine.generate`: the scripted engine's own work
    (the oracle, its text's ids), which a served model does in another process."""

    def __init__(self, runner: EpisodeRunner) -> None:
        self.seconds = 0.0
        generate = runner.engine.generate

        async def counted(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return await generate(*args, **kwargs)
            finally:
                self.seconds += time.process_time() - started

        runner.engine.generate = counted  # type: ignore[method-assign]


async def loop_cpu(
    play: Play, runner: EpisodeRunner, engine: EngineCpu, row: dict[str, Any]
) -> tuple[float, int]:
    """(process CPU seconds of the episode's loop, model calls): all threads of this process (off-loop
    encodes included) while the one episode runs, less the engine's own CPU."""
    started, before = time.process_time(), engine.seconds
    _, _, calls = await play(runner, row)
    return time.process_time() - started - (engine.seconds - before), calls
