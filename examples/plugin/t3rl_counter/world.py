"""The counter world: reach a target number with `add(n)` calls, then say so."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from t3rl_core.config import EnvConfig
from t3rl_core.envs.base import Env
from t3rl_core.types import Action, AnswerAction, ToolCall, ToolCallAction, Transition

ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add n to the counter and return its new value.",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
}


class CounterConfig(EnvConfig):
    """Tasks: start at 0, reach `target` (drawn per task) with at most `max_add` per call."""

    # The keys of every outcome(): rewards are checked against them before a run.
    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset({"value", "target", "calls", "answered"})

    name: str = "counter"
    tasks: int = Field(8, ge=1)  # rows per split
    max_add: int = Field(5, ge=1)  # largest n a single add(n) may take
    seed: int = 0  # draws the targets

    def split_names(self) -> list[str]:
        return ["counter_train", "counter_test"]


class CounterEnv(Env):
    def __init__(self, target: int, max_add: int) -> None:
        self.target, self.max_add, self.value, self.calls = target, max_add, 0, 0
        self.answered = False

    async def step(self, action: Action) -> Transition:
        if not isinstance(action, ToolCallAction):
            self.answered = True
            return Transition(done=True)
        results = []
        for call in action.calls:
            self.calls += 1
            n = call.arguments.get("n")
            if call.name != "add" or not isinstance(n, int) or abs(n) > self.max_add:
                results.append(f"error: call add(n) with an integer |n| <= {self.max_add}")
                continue
            self.value += n
            results.append(str(self.value))
        return Transition(messages=[{"role": "tool", "content": r} for r in results])

    def outcome(self) -> dict[str, Any]:
        return {"value": self.value, "target": self.target, "calls": self.calls, "answered": self.answered}

    def oracle(self) -> Action | None:
        if self.value == self.target:
            return None if self.answered else AnswerAction(text=f"The counter is at {self.target}.")
        step = max(-self.max_add, min(self.max_add, self.target - self.value))
        return ToolCallAction(calls=(ToolCall("add", {"n": step}),), text="")


class CounterWorld:
    """The plugin: built once per run from its config, makes one CounterEnv per task row."""

    Config = CounterConfig

    def __init__(self, config: CounterConfig) -> None:
        self.config = config

    def __call__(self, task: dict[str, Any], mode: str) -> CounterEnv:
        return CounterEnv(int(task["label"]), self.config.max_add)

    async def aclose(self) -> None:
        """Nothing shared to release."""

    @staticmethod
    def prepare(config: CounterConfig, out_dir: Path) -> dict[str, Path]:
        """One JSONL file per split: a prompt, the add tool, the target as label."""
        rng, paths = random.Random(config.seed), {}
        for split in config.split_names():
            path = Path(out_dir) / f"{split}.jsonl"
            with path.open("w") as sink:
                for index in range(config.tasks):
                    target = rng.randint(1, 4 * config.max_add)
                    prompt = [
                        {"role": "user", "content": f"Use add to bring the counter from 0 to {target}."}
                    ]
                    metadata = {"data_source": "counter", "index": f"{split}_{index}", "tools": [ADD_TOOL]}
                    sink.write(json.dumps({"prompt": prompt, "metadata": metadata, "label": target}) + "\n")
            paths[split] = path
        return paths
