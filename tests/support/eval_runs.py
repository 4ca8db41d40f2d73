"""What the eval tests share: the BFCL runtime on the tiny Qwen3 tokenizer, an eval config of the scripted
reference engine, and an eval's trajectories read back."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from t3rl_core.config import RuntimeConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import TRAJECTORIES_FILE
from tests.support.tiny_stack import runtime_dict


@cache
def bfcl_runtime() -> RuntimeConfig:
    from t3rl_core.chat.tiny import shared_tokenizer_dir

    return RuntimeConfig.model_validate(runtime_dict(shared_tokenizer_dir("qwen3"), max_new_tokens=32768))


def reference_config(concurrency: int = 3, **settings: Any) -> EvalConfig:
    return EvalConfig.model_validate(
        {"engine": {"name": "reference"}, "concurrency": concurrency, **settings}
    )


def read_records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / TRAJECTORIES_FILE).read_text().splitlines()]


def count_episodes(monkeypatch: Any) -> list[str]:
    """The task ids of the episodes the eval runner plays from now on (pytest's monkeypatch undoes it)."""
    from t3rl_core.eval import runner

    played: list[str] = []
    original = runner._run_episode

    async def counting(engine_runner: Any, job: Any, sampling: Any, attempt: int) -> dict[str, Any]:
        played.append(job.task_id)
        return await original(engine_runner, job, sampling, attempt)

    monkeypatch.setattr(runner, "_run_episode", counting)
    return played
