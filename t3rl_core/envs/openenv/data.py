"""An OpenEnv environment's tasks as t3rl JSONL rows: a reset seed each, the system message, the one
tool whose parameters are the environment's action schema (read from its server's /schema), and the
environment's name and version as the server published them (/metadata)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.env import RELEASE_KEY, RESET_KEY
from t3rl_core.envs.openenv.server import EnvServer
from t3rl_core.envs.openenv.tool import action_tool


def prepare(config: OpenEnvEnvConfig, out_dir: Path) -> dict[str, Path]:
    server = EnvServer(config)
    try:
        tool = action_tool(config, server.schema()["action"])
        release = server.release()
    finally:
        server.close()
    data = config.data
    splits = {
        data.train_split: range(data.seed, data.seed + data.train_episodes),
        data.eval_split: range(
            data.seed + data.train_episodes, data.seed + data.train_episodes + data.eval_episodes
        ),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for split, seeds in splits.items():
        rows = [row(config, tool, split, i, seed, release) for i, seed in enumerate(seeds)]
        written[split] = out_dir / f"{split}.jsonl"
        written[split].write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return written


def row(
    config: OpenEnvEnvConfig,
    tool: dict[str, Any],
    split: str,
    index: int,
    seed: int,
    release: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One task; `release` is the environment's name and version its server published (the rows are
    then another split file when the environment changes, and the world refuses rows of another one)."""
    return {
        "prompt": [{"role": "system", "content": config.system_prompt}],
        "metadata": {
            "data_source": "openenv",
            "split": split,
            "index": index,
            "tools": [tool],
            RESET_KEY: {"seed": seed},
            RELEASE_KEY: release or {},
        },
    }
