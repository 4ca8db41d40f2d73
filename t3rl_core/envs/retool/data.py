"""Math problems with reference answers → ReTool JSONL rows (one user message, answer as label), plus
conversations for the SFT cold start."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.counts import counted
from t3rl_core.data.progress import Steps
from t3rl_core.data.rows import read_jsonl
from t3rl_core.envs.retool.answers import answer_text
from t3rl_core.envs.retool.config import ReToolDataConfig, ReToolEnvConfig
from t3rl_core.envs.retool.parser import interpreter_block

SAMPLE_FILE = "sample_problems.jsonl"


def prepare(config: ReToolEnvConfig, out_dir: Path) -> dict[str, Path]:
    """Shuffle the problems, hold out the first `test_size` as test, write train, test (and SFT) JSONL."""
    data = config.data
    records = read_problems(data)
    if len(records) <= data.test_size:
        raise ValueError(
            f"{counted(len(records), 'problem')} leave no training rows after holding out "
            f"test_size={data.test_size}; "
            "lower env.data.test_size or point env.data.source at a larger set (e.g. DAPO-Math-17K)"
        )
    order = shuffled_order(len(records), data.seed)
    test, train = order[: data.test_size], order[data.test_size :]
    splits = {
        data.test_split: [problem_row(data, records[i], i, "test") for i in test],
        data.train_split: [problem_row(data, records[i], i, "train") for i in train],
    }
    if data.sft_source is not None:
        conversations = _read(Path(data.sft_source))
        splits[data.sft_split] = [conversation_row(data, r, i) for i, r in enumerate(conversations)]
    elif data.source is None:
        splits[data.sft_split] = [worked_row(config, records[i], i) for i in train]
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    phase = Steps(sum(map(len, splits.values())), "rows written")
    for split, rows in splits.items():
        written[split] = out_dir / f"{split}.jsonl"
        lines = [json.dumps(r, ensure_ascii=False) + "\n" for r in rows]
        phase.advance(len(rows))
        written[split].write_text("".join(lines), encoding="utf-8")
    return written


def shuffled_order(n: int, seed: int) -> list[int]:
    """Row order after Hugging Face datasets' `Dataset.shuffle(seed=seed)`, Agent-R1's split: it permutes
    the rows with `np.random.default_rng(seed).permutation(n)` (a different set than random.Random)."""
    import numpy as np

    return [int(i) for i in np.random.default_rng(seed).permutation(n)]


def read_problems(data: ReToolDataConfig) -> list[dict[str, Any]]:
    if data.source is not None:
        return _read(Path(data.source))
    text = resources.files("t3rl_core.envs.retool").joinpath(SAMPLE_FILE).read_text(encoding="utf-8")
    return [outside_json.loads(line, SAMPLE_FILE) for line in text.splitlines() if line.strip()]


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        where = "env.data.source / env.data.sft_source"
        raise FileNotFoundError(f"ReTool data file not found: {path.absolute()} ({where})")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    return [row for _, row in read_jsonl(path)]


def _metadata(data: ReToolDataConfig, index: int, split: str) -> dict[str, Any]:
    return {"data_source": data.data_source, "split": split, "index": index, "tools": []}


def problem_row(data: ReToolDataConfig, record: dict[str, Any], index: int, split: str) -> dict[str, Any]:
    missing = [k for k in (data.question_key, data.answer_key) if k not in record]
    if missing:
        raise KeyError(f"problem {index} has no {missing} (set env.data.question_key / answer_key)")
    question = str(record[data.question_key])
    return {
        "prompt": [{"role": "user", "content": data.instruction.format(question=question)}],
        "metadata": _metadata(data, index, split),
        "label": answer_text(record[data.answer_key], f"problem {index} ({data.answer_key})"),
    }


def worked_row(config: ReToolEnvConfig, record: dict[str, Any], index: int) -> dict[str, Any]:
    """A built-in problem solved the ReTool way: one code call, its output, the boxed answer."""
    row = problem_row(config.data, record, index, "sft")
    solution = (
        f"Let me compute this with Python.\n<code>\n```python\n{record['code']}\n```\n</code>"
        + interpreter_block(record["output"], config.max_tool_response_length)
        + f"The output gives the result.\n<answer>\n\\boxed{{{row['label']}}}\n</answer>"
    )
    row["prompt"].append({"role": "assistant", "content": solution})
    return row


def conversation_row(data: ReToolDataConfig, record: dict[str, Any], index: int) -> dict[str, Any]:
    messages = record.get(data.messages_key)
    well_formed = isinstance(messages, list) and all(
        isinstance(m, dict) and {"role", "content"} <= m.keys() for m in messages
    )
    if not well_formed:
        raise ValueError(f"SFT row {index}: '{data.messages_key}' must be a list of {{role, content}} dicts")
    if not any(m["role"] == "assistant" for m in messages):
        raise ValueError(f"SFT row {index} has no assistant message to train on")
    return {
        "prompt": [{"role": m["role"], "content": m["content"]} for m in messages],
        "metadata": _metadata(data, index, "sft"),
    }
