"""ToolRL's rlla parquet → t3rl JSONL rows (prompt = system + user messages, label = ground truth)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.data.progress import counted
from t3rl_core.envs.toolrl.config import ToolRLEnvConfig

# How ToolRL's system prompt lists a tool: "N. Name: …\nDescription: …\nParameters: {json}".
_TOOL_ENTRY = re.compile(r"^\d+\. Name: (.*)\nDescription: (.*)\nParameters: (.*)$", re.MULTILINE)


def prepare(config: ToolRLEnvConfig, out_dir: Path) -> dict[str, Path]:
    """Write one `<split>.jsonl` per configured parquet; returns split name → path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for split, source in config.data.splits.items():
        records = read_parquet(Path(source))
        converted = counted(records, len(records), f"{split} rows converted")
        rows = [convert_row(r, config.data.tools_in_metadata) for r in converted]
        path = out_dir / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        written[split] = path
    return written


def read_parquet(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(
            f"ToolRL parquet not found: {path.absolute()} (ToolRL's dataset/rlla_4k/{{train,test}}.parquet;"
            " point env.data.splits at them)"
        )
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = {"data_source", "prompt", "reward_model", "extra_info"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path} is not a ToolRL rlla parquet: missing columns {sorted(missing)}")
    return table.to_pylist()


def convert_row(row: dict[str, Any], tools_in_metadata: bool) -> dict[str, Any]:
    prompt = [{"role": m["role"], "content": m["content"]} for m in row["prompt"]]
    system = next((m["content"] for m in prompt if m["role"] == "system"), "")
    extra = row["extra_info"]
    return {
        "prompt": prompt,
        "metadata": {
            "data_source": row["data_source"],
            "split": extra["split"],
            "index": extra["index"],
            "tools": listed_tools(system) if tools_in_metadata else [],
        },
        "label": row["reward_model"]["ground_truth"],
    }


def listed_tools(system_prompt: str) -> list[dict[str, Any]]:
    """The tools of a ToolRL system prompt as OpenAI tools; parameter specs are kept as ToolRL lists them."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": outside_json.loads(parameters, "a tool's parameters"),
                },
            },
        }
        for name, description, parameters in _TOOL_ENTRY.findall(system_prompt)
    ]
