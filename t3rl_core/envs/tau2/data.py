"""Dataset rows of the tau2 world, from the tasks shipped in the tau2 package.

One file per tau2 split, `tau2_<split>.jsonl`, holding the selected domains' tasks of that split:

    {"prompt": [{"role": "system", "content": <agent instructions + the domain policy>}],
     "metadata": {"tools": [<domain tools + respond + done, OpenAI format>],
                  "data_source": "tau2_<domain>", "split": <split>, "index": <position in the
                  domain's split>, "domain": <domain>, "task_id": <tau2 id>, "task": <tau2 Task>}}

The prompt stops at the system message: the customer's opening is the user simulator's reply to
tau2's greeting, produced by `Tau2Env.reset()`, so that an LLM user phrases it itself as in tau2.

`tau2_sft.jsonl` (optional) holds gold demonstrations for supervised warm-up: each task of one split
played by its gold plan (`Tau2Env.oracle`) against the scripted user, kept only when tau2 scores the
episode 1.0 and skipped when the task is solved by doing nothing; `prompt` is then the whole
conversation, assistant turns as OpenAI tool calls.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from t3rl_core.data.progress import Steps
from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.domain import domain_spec, load_tasks, user_task
from t3rl_core.envs.tau2.oracle import demonstrates_anything
from t3rl_core.envs.tau2.users import ScriptedUser, ScriptedUserConfig
from t3rl_core.types import Message, ToolCallAction

SFT_SPLIT = "sft"


def split_file(split: str) -> str:
    return f"tau2_{split}"


def rows(config: Tau2EnvConfig, split: str) -> Iterator[dict[str, Any]]:
    """The rows of one tau2 split over the configured domains, domain by domain in tau2's order."""
    for domain in config.domains:
        spec = domain_spec(domain)
        tasks = load_tasks(domain, split)[: config.data.limit]
        for index, task in enumerate(tasks):
            yield {
                "prompt": [{"role": "system", "content": spec.system_prompt}],
                "metadata": {
                    "tools": spec.tools,
                    "data_source": f"tau2_{domain}",
                    "split": split,
                    "index": index,
                    "domain": domain,
                    "task_id": task.id,
                    "task": task.model_dump(mode="json"),
                },
            }


async def demonstration(config: Tau2EnvConfig, row: dict[str, Any]) -> dict[str, Any] | None:
    """The row's task played by its gold plan against the scripted user, as a whole-conversation row;
    None when there is nothing to demonstrate or tau2 does not score the episode 1.0."""
    from t3rl_core.envs.tau2.env import Tau2Env, Tau2Task

    spec = Tau2Task.from_row(row)
    if not demonstrates_anything(spec.task):
        return None
    domain = domain_spec(spec.domain)
    user = ScriptedUser(ScriptedUserConfig()).session(user_task(spec.task, domain))
    env = Tau2Env(spec, domain, user, config, "train")
    messages: list[Message] = list(row["prompt"])
    transition = await env.reset()
    messages += transition.messages
    while not transition.done:
        action = env.oracle()
        if not isinstance(action, ToolCallAction):
            raise RuntimeError(f"tau2 task {spec.task.id}: the gold plan ended before the episode did")
        (call,) = action.calls
        function = {"name": call.name, "arguments": call.arguments}
        messages.append(
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": function}]}
        )
        transition = await env.step(action)
        messages += transition.messages
    if env.outcome()["task_reward"] < 1.0:
        return None
    return {"prompt": messages, "metadata": {**row["metadata"], "split": SFT_SPLIT}}


def prepare(config: Tau2EnvConfig, out_dir: Path) -> dict[str, Path]:
    """Registry entry `tau2` of `DATASETS`: writes tau2_<split>.jsonl per configured split (and
    tau2_sft.jsonl from gold demonstrations) and returns split name → path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for split in config.data.splits:
        written[split_file(split)] = _write(out_dir, split_file(split), rows(config, split))
    if config.data.demonstrations_split is not None:
        source = list(rows(config, config.data.demonstrations_split))
        demos = asyncio.run(_demonstrations(config, source))
        name = split_file(SFT_SPLIT)
        written[name] = _write(out_dir, name, (demo for demo in demos if demo is not None))
    return written


async def _demonstrations(config: Tau2EnvConfig, source: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    phase = Steps(len(source), "tau2 demonstrations played")
    demos = []
    for row in source:
        demos.append(await demonstration(config, row))
        phase.advance()
    return demos


def _write(out_dir: Path, name: str, items: Iterator[dict[str, Any]]) -> Path:
    path = out_dir / f"{name}.jsonl"
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w") as sink:
        for item in items:
            sink.write(json.dumps(item) + "\n")
    tmp.replace(path)
    return path
