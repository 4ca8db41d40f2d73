"""The order an eval starts its episodes in: longest and shortest alternately, by the env factory's count."""

import asyncio
from types import SimpleNamespace

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import make_factory
from t3rl_core.eval.runner import plan_jobs, run_eval, start_order
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


def test_long_and_short_episodes_start_alternately_and_the_bfcl_count_is_exact(tmp_path):
    rows = bfcl_rows(per_category=3)
    factory = make_factory(BFCLEnvConfig())
    expected = {row["metadata"]["index"]: factory.expected_model_calls(row) for row in rows}
    # One episode in flight: the trajectories are written in the order the episodes started.
    asyncio.run(run_eval(bfcl_runtime(), reference_config(1), rows, tmp_path, show_progress=False))
    records = read_records(tmp_path)
    calls = [record["num_model_calls"] for record in records]
    assert sorted(calls) == sorted(expected.values()) and len(calls) == len(rows)
    assert all(record["num_model_calls"] == expected[record["task_id"]] for record in records)
    assert all(record["success"] for record in records)
    longest, shortest = calls[0::2], calls[1::2]
    assert longest == sorted(longest, reverse=True) and shortest == sorted(shortest)
    assert calls[0] == max(calls) and calls[1] == min(calls) and min(longest) >= max(shortest)


def test_the_order_pairs_the_longest_with_the_shortest_and_keeps_the_plan_without_a_hint():
    rows = [{"metadata": {"index": f"t{i}", "calls": calls}} for i, calls in enumerate([2, None, 5, 3, 5])]
    jobs = plan_jobs(rows, reference_config())
    hint = SimpleNamespace(expected_model_calls=lambda row: row["metadata"]["calls"])
    assert [job.task_id for job in start_order(jobs, hint)] == ["t2", "t1", "t4", "t0", "t3"]
    assert start_order(jobs, object()) == jobs  # a factory that cannot tell: the plan's order
