"""A plugin world's optional `Env.cut_off(text)` hook: a model call cut at the token limit is never
stepped, but the world that implements the hook is handed the call's text (docs/explanation/plugins.md)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.envs.base import Env
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, Transition
from tests.rollout.fakes import FixedEngine

_NAME = f"{__name__}:KeepsCutWorld"
_CUT = '<tool_call>\n{"name": "add", "arguments": {"n": 3'


class KeepsCutConfig(EnvConfig):
    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset({"reward", "metrics", "cut", "steps"})
    name: Literal[_NAME] = _NAME  # type: ignore[valid-type]


class KeepsCutEnv(Env):
    def __init__(self) -> None:
        self.cut: list[str] = []
        self.steps = 0

    async def reset(self) -> Transition:
        return Transition()

    async def step(self, action: Action) -> Transition:
        self.steps += 1
        return Transition(messages=[{"role": "tool", "content": "ok"}])

    def cut_off(self, text: str) -> None:
        self.cut.append(text)

    def outcome(self) -> dict[str, Any]:
        return {"reward": float(bool(self.cut)), "metrics": {}, "cut": self.cut, "steps": self.steps}


class KeepsCutWorld:
    Config = KeepsCutConfig

    def __init__(self, config: KeepsCutConfig) -> None:
        self.config = config

    def __call__(self, task: dict[str, Any], mode: str) -> KeepsCutEnv:
        return KeepsCutEnv()

    async def aclose(self) -> None:
        pass


def test_a_plugin_world_gets_the_text_of_a_call_cut_at_the_token_limit() -> None:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": _NAME},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    runner = EpisodeRunner.from_runtime(runtime, FixedEngine([]))
    ids = runner.chat.encode(_CUT)
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "length")])
    task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}

    episode, reward = asyncio.run(runner.run(task, "eval"))
    assert episode.status == "truncated" and episode.failure is None
    assert episode.outcome["cut"] == [_CUT] and episode.outcome["steps"] == 0  # handed over, never stepped
    assert reward.value == 1.0
