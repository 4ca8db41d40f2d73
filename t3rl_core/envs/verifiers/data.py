"""A verifiers environment's datasets → t3rl JSONL rows: the prompt as chat messages, the tools it
offers in OpenAI form, verifiers' own rollout input kept for the episode, and the environment's installed
package and version."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.data.progress import counted
from t3rl_core.envs.verifiers.boundary import EnvLoadError, dataset_problem, prompt_problem
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.envs.verifiers.convert import to_chat, to_openai_tools
from t3rl_core.envs.verifiers.declared import installed_release
from t3rl_core.envs.verifiers.env import INPUT_KEY, RELEASE_KEY, load
from t3rl_core.envs.verifiers.loader_args import module_name

# verifiers' row columns a rollout reads (RolloutInput), besides the prompt.
_INPUT_COLUMNS = ("example_id", "answer", "info", "task")


def prepare(config: VerifiersEnvConfig, out_dir: Path) -> dict[str, Path]:
    """Write the train split from the environment's `dataset` and the eval split from its
    `eval_dataset` (verifiers falls back to `dataset`); an environment without a train dataset gets an
    empty train split."""
    vf_env = load(config)
    release = installed_release(module_name(config.id))
    limit = config.data.limit or -1
    splits = {
        config.data.train_split: vf_env.get_dataset(n=limit) if vf_env.build_dataset() is not None else [],
        config.data.eval_split: vf_env.get_eval_dataset(n=limit),
    }
    converted: dict[str, list[dict[str, Any]]] = {}
    for split, dataset in splits.items():
        problem = None if isinstance(dataset, list) else dataset_problem(config.id, split, dataset)
        if problem is not None:
            raise EnvLoadError(problem)
        records = list(dataset)
        converted[split] = [
            row(config, vf_env, r, split, release)
            for r in counted(records, len(records), f"{split} rows converted")
        ]
    out_dir.mkdir(parents=True, exist_ok=True)  # only once every row converted: nothing half-written
    written: dict[str, Path] = {}
    for split, rows in converted.items():
        path = out_dir / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        written[split] = path
    return written


def row(
    config: VerifiersEnvConfig,
    vf_env: Any,
    record: dict[str, Any],
    split: str,
    release: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One task; `release` is the installed environment's package and version (the world refuses the
    row under another release)."""
    problem = prompt_problem(config.id, split, record.get("example_id"), record["prompt"])
    if problem is not None:
        raise EnvLoadError(problem)
    prompt = [_without_nulls(m) for m in record["prompt"]]
    info = record.get("info")
    info = outside_json.loads(info, "a row's info") if isinstance(info, str) else info or {}
    tools = info.get("tool_defs") if isinstance(info, dict) and "tool_defs" in info else vf_env.tool_defs
    stored = {key: record[key] for key in _INPUT_COLUMNS if record.get(key) is not None}
    return {
        "prompt": [to_chat(m) for m in prompt],
        "metadata": {
            "data_source": str(record.get("task") or config.id),
            "split": split,
            "index": record["example_id"],
            "tools": to_openai_tools(tools or []),
            INPUT_KEY: {**stored, "prompt": prompt, "info": info},
            RELEASE_KEY: release or {},
        },
        "label": record.get("answer"),
    }


def _without_nulls(message: dict[str, Any]) -> dict[str, Any]:
    """A message as a datasets column stores it, without the None of keys other messages have."""
    return {key: value for key, value in message.items() if value is not None}
