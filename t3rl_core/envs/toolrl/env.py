"""The ToolRL episode: the model answers once; the answer text and the ground truth go to the reward."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.toolrl.config import ToolRLEnvConfig
from t3rl_core.types import Action, AnswerAction, InvalidAction, ToolCallAction, Transition


class ToolRLEnv(Env):
    """Single turn, nothing executed: ToolRL scores the raw `<think>…</think>\\n<tool_call>…` text."""

    action_format = ToolRLEnvConfig.ACTION_FORMAT

    def __init__(self, task: Mapping[str, Any]) -> None:
        label = task.get("label")
        if not isinstance(label, str):
            raise ValueError(f"a toolrl task needs its ground-truth answer text as 'label', got {label!r}")
        self.ground_truth = label
        self.response: str | None = None
        self.cut_text: str | None = None  # the answer cut at the token limit (ToolRL scores it as is)

    async def step(self, action: Action) -> Transition:
        if self.response is not None:
            raise RuntimeError("a toolrl episode is a single answer; step() was called twice")
        self.response = _text(action)
        return Transition(done=True)

    def cut_off(self, text: str) -> None:
        self.cut_text = text

    def outcome(self) -> dict[str, Any]:
        return {
            "response": self.response if self.response is not None else self.cut_text or "",
            "ground_truth": self.ground_truth,
            "answered": self.response is not None,
        }

    def oracle(self) -> Action | None:
        return AnswerAction(text=self.ground_truth) if self.response is None else None


def _text(action: Action) -> str:
    match action:
        case AnswerAction(text=text) | ToolCallAction(text=text) | InvalidAction(text=text):
            return text
    raise TypeError(f"not an action: {action!r}")


class ToolRLEnvFactory:
    """Stateless: every episode only needs its own task row."""

    def __init__(self, config: ToolRLEnvConfig) -> None:
        self.config = config

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> ToolRLEnv:
        return ToolRLEnv(task)

    async def aclose(self) -> None:
        """Nothing shared to release."""


def make_factory(config: ToolRLEnvConfig) -> ToolRLEnvFactory:
    return ToolRLEnvFactory(config)
