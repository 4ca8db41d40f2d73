"""Adversarial hub environments and plugins, hunt wave three (docs/explanation/plugins.md, "Hunt wave
three"). Each is answered by the declaration every world (or plugin) shares, not by a case of its own:
a world call's bound (`Env.CALL_TIMEOUT_S`) holds for the time the call took, measured; what a factory
started is released by its `aclose`; what a plugin's import did to the process is
`registry.import_effects`; a plugin distribution's requirements are read where its name is.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

import pytest

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.envs.base import Env
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, Transition
from tests.rollout.fakes import FixedEngine


class _Config(EnvConfig):
    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset({"reward", "metrics"})
    name: str = f"{__name__}:World"


class _Quick(Env):
    CALL_TIMEOUT_S = 60.0  # generous: a busy machine must not fail the world that keeps its bound

    async def step(self, action: Action) -> Transition:
        await asyncio.sleep(0)
        return Transition(done=True)

    def outcome(self) -> dict[str, Any]:
        return {"reward": 1.0, "metrics": {}}


class _Blocking(_Quick):
    CALL_TIMEOUT_S = 0.05

    async def step(self, action: Action) -> Transition:
        time.sleep(0.2)  # the kind under test: a blocking call in an async def
        return Transition(done=True)


class _Swallowing(_Quick):
    CALL_TIMEOUT_S = 0.05

    async def step(self, action: Action) -> Transition:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # the kind under test: the bound's cancellation swallowed
            time.sleep(0.01)
        return Transition(done=True)


class World:
    """A factory of `env_class` worlds (one per call)."""

    Config = _Config
    env_class: type[Env] = _Quick

    def __init__(self, config: _Config) -> None:
        self.config = config

    def __call__(self, task: dict[str, Any], mode: str) -> Env:
        return self.env_class()

    async def aclose(self) -> None:
        pass


def _runner() -> EpisodeRunner:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": f"{__name__}:World"},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    return EpisodeRunner.from_runtime(runtime, FixedEngine([]))


def _play(runner: EpisodeRunner) -> str:
    ids = runner.chat.encode('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "stop")])
    task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}
    episode, _ = asyncio.run(runner.run(task, "eval"))
    return f"{episode.status}: {episode.failure.message if episode.failure else ''}"


# ----------------------------------------------------------------------------- a call's bound, measured


@pytest.mark.parametrize(
    ("world", "said"),
    [
        (_Blocking, "it held the event loop (a time.sleep or blocking I/O in an async def)"),
        (_Swallowing, "it caught the cancellation and returned anyway: let asyncio.CancelledError propagate"),
    ],
    ids=["time-sleep", "swallowed-cancel"],
)
def test_a_call_asyncio_could_not_cut_still_fails_past_its_bound(
    world: type[Env], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both went on as if the bound held: `t3rl eval` complete, the bound of 0.05 s silently 0.2 s (a
    `time.sleep` holds every concurrent episode too)."""
    monkeypatch.setattr(World, "env_class", world)
    found = _play(_runner())
    assert found.startswith(f"failed: environment error: {world.__name__}.step() took "), found
    assert "past its 0.05 s bound" in found and said in found
    monkeypatch.setattr(World, "env_class", _Quick)  # a world within its bound is played as before
    assert _play(_runner()) == "completed: "
