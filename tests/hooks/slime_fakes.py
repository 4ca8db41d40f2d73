"""Episodes for the slime hooks without a model server: the toy env and engines of tests/rollout behind
`hooks.generate`, with the runtime config attached to slime-shaped `args` as slime attaches it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import Engine
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.hooks import slime as hooks
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, Transition
from tests.rollout.fakes import ToyEnv, task
from tests.support.slime_sample import Sample


def slime_args(max_failure_rate: float = 0.05, **attributes: Any) -> SimpleNamespace:
    """slime's `args` after --custom-config-path: the runtime mapping under `t3rl`."""
    runtime = {
        "env": {"name": "bfcl_multi_turn"},
        "reward": {"name": "progress"},
        "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
        "parsers": {"tool_call_parser": "qwen25"},
        "rollout": {"max_failure_rate": max_failure_rate},
    }
    defaults = {"partial_rollout": False, "rollout_batch_size": 2, "n_samples_per_prompt": 4}
    return SimpleNamespace(t3rl=runtime, **(defaults | attributes))


class MissingPackageEnv(ToyEnv):
    """A world whose package is not installed on this rollout node: every step raises."""

    async def step(self, action: Action) -> Transition:
        import bfcl_eval_not_installed  # type: ignore[import-not-found]  # noqa: F401

        raise AssertionError("unreachable")


class Factory:
    def __init__(self, env: type[ToyEnv] = ToyEnv) -> None:
        self.env = env

    def __call__(self, row: dict[str, Any], mode: str) -> ToyEnv:
        return self.env(row["metadata"]["questions"])

    async def aclose(self) -> None:
        pass


class Progress(Reward):
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def __call__(self, inp: RewardInput) -> RewardResult:
        if self.fail:
            raise ZeroDivisionError("no turns")
        return RewardResult(inp.outcome["turns_answered"] / inp.outcome["turns"])


def use_runner(
    monkeypatch: Any,
    chat: ChatFormat,
    *,
    env: type[ToyEnv] = ToyEnv,
    engine: Engine | None = None,
    reward: Reward | None = None,
) -> None:
    """Make `hooks.generate` play episodes with these pieces (and a fresh failure budget)."""

    async def runner(args: Any, runtime: RuntimeConfig) -> EpisodeRunner:
        return EpisodeRunner(
            runtime,
            engine or ReferenceEngine(ReferenceEngineConfig(), chat=chat),
            env_factory=Factory(env),
            chat=chat,
            reward=reward or Progress(),
        )

    monkeypatch.setattr(hooks, "_runner", runner)
    monkeypatch.setattr(hooks, "_BUDGET", None)


def toy_sample(index: int, group: int, source: str = "multi_turn_base") -> Sample:
    row = task()
    return Sample(
        index=index,
        group_index=group,
        prompt=row["prompt"],
        metadata=row["metadata"] | {"data_source": source},
    )


def fake_slime(monkeypatch: Any, modules: dict[str, dict[str, Any]]) -> None:
    """Stand-in slime modules for one test: each dotted name with the given attributes, its parent
    packages created and each module set on its parent, as an import would."""
    made: dict[str, ModuleType] = {}
    for name, attributes in modules.items():
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            made.setdefault(".".join(parts[:depth]), ModuleType(".".join(parts[:depth])))
        for key, value in attributes.items():
            setattr(made[name], key, value)
    for name, module in made.items():
        monkeypatch.setitem(sys.modules, name, module)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(made[parent], child, module)


@dataclass
class EvalOutput:
    """slime's RolloutFnEvalOutput."""

    data: dict
    metrics: dict | None = None
