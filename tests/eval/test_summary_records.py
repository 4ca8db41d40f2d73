"""The records an eval keeps in memory for summary.json hold no token lists or messages (those are in
trajectories.jsonl), fresh and resumed, and the summary reads the same figures from them."""

import asyncio
import statistics
from typing import Any

from t3rl_core.eval import runner
from t3rl_core.eval.runner import HEAVY_FIELDS, run_eval
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


def test_the_summary_reads_records_without_their_token_lists_fresh_and_resumed(tmp_path, monkeypatch):
    seen: list[list[dict[str, Any]]] = []
    original = runner._summary

    def capturing(runtime: Any, config: Any, records: list[dict[str, Any]], *args: Any) -> dict[str, Any]:
        seen.append(records)
        return original(runtime, config, records, *args)

    monkeypatch.setattr(runner, "_summary", capturing)
    rows = bfcl_rows(per_category=1)
    asyncio.run(run_eval(bfcl_runtime(), reference_config(2), rows[:3], tmp_path, show_progress=False))
    summary = asyncio.run(
        run_eval(bfcl_runtime(), reference_config(2), rows, tmp_path, resume=True, show_progress=False)
    )
    lines = read_records(tmp_path)
    assert len(lines) == len(rows) and len(seen[-1]) == len(rows)
    assert summary["attempts"]["episodes_by_attempt"] == {"1": 3, "2": len(rows) - 3}
    for records in seen:
        assert all(not HEAVY_FIELDS & record.keys() for record in records)
    assert summary["mean_response_tokens"] == statistics.mean(len(line["response_ids"]) for line in lines)
    by_task = {record["task_id"]: record for record in seen[-1]}
    for line in lines:
        assert by_task[line["task_id"]] == {
            **{key: value for key, value in line.items() if key not in HEAVY_FIELDS},
            "response_tokens": len(line["response_ids"]),
        }
