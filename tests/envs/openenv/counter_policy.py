"""A scripted policy for the counter environment, as an engine plugin `t3rl eval --engine` can name: it
reads the last observation and moves straight to the target, in the chat family's tool-call text."""

from __future__ import annotations

import json
from typing import Literal

from t3rl_core.chat.format import ChatFormat
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.config import EngineConfig
from t3rl_core.engines.reference import as_model_output


def move(delta: int) -> str:
    return f"<tool_call>\n{json.dumps({'name': 'step', 'arguments': {'delta': delta}})}\n</tool_call>"


class CounterPolicyConfig(EngineConfig):
    name: Literal["tests.envs.openenv.counter_policy:CounterPolicy"] = (
        "tests.envs.openenv.counter_policy:CounterPolicy"
    )


class CounterPolicy(Engine):
    Config = CounterPolicyConfig

    def __init__(self, config: CounterPolicyConfig, chat: ChatFormat) -> None:
        self.chat = chat

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        assert context is not None
        target = json.loads(context.messages[-1]["content"])["target"]
        return as_model_output(self.chat, move(target), calls_tools=True, sampling=sampling)
