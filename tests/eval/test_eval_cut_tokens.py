"""An eval's records carry the tokens each episode dropped at its token limits (`cut_tokens`, as slime's
samples do under `t3rl_metrics`), and its summary counts them: a BFCL episode under a context limit
just past its prompt loses tool outputs, and the eval said nothing of it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.eval.runner import run_eval
from tests.support.eval_runs import read_records, reference_config
from tests.support.tiny_stack import bfcl_rows, runtime_dict


def test_cut_tokens_reach_the_records_and_the_summary(tmp_path: Path) -> None:
    [row] = bfcl_rows(per_category=1)[:1]
    limits = {"max_new_tokens": 32768}
    runtime = RuntimeConfig.model_validate(runtime_dict(shared_tokenizer_dir("qwen3"), **limits))
    chat = ChatFormat.from_config(runtime.chat, runtime.parsers)
    prompt = len(chat.prompt_ids(row["prompt"], row["metadata"]["tools"]))
    limited = runtime.model_copy(
        update={"rollout": runtime.rollout.model_copy(update={"max_context_len": prompt + 300})}
    )
    asyncio.run(run_eval(limited, reference_config(1), [row], tmp_path, show_progress=False))

    [record] = read_records(tmp_path)
    assert record["status"] == "truncated" and record["cut_tokens"] > 0
    assert len(record["prompt_ids"]) + len(record["response_ids"]) <= prompt + 300
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cut_tokens"] == {"episodes": 1, "tokens": record["cut_tokens"]}
