"""The order an eval starts its episodes in: the longest first, by the env factory's own count."""

import asyncio
from types import SimpleNamespace

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import make_factory
from t3rl_core.eval.runner import longest_first, plan_jobs, run_eval
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


def test_the_longest_episodes_start_first_and_the_bfcl_count_is_exact(tmp_path):
    rows = bfcl_rows(per_category=3)
    factory = make_factory(BFCLEnvConfig())
    expected = {row["metadata"]["index"]: factory.expected_model_calls(row) for row in rows}
    in_file_order = [expected[row["metadata"]["index"]] for row in rows]
    assert in_file_order != sorted(in_file_order, reverse=True)  # else the order proves nothing
    # One episode in flight: the trajectories are written in the order the episodes started.
    asyncio.run(run_eval(bfcl_runtime(), reference_config(1), rows, tmp_path, show_progress=False))
    records = read_records(tmp_path)
    calls = [record["num_model_calls"] for record in records]
    assert calls == sorted(calls, reverse=True) and len(calls) == len(rows)
    assert all(record["num_model_calls"] == expected[record["task_id"]] for record in records)
    assert all(record["success"] for record in records)


def test_equal_and_unknown_lengths_keep_the_plan_order():
    rows = [{"metadata": {"index": f"t{i}", "calls": calls}} for i, calls in enumerate([2, None, 5, 2, 5])]
    jobs = plan_jobs(rows, reference_config(samples=2))
    hint = SimpleNamespace(expected_model_calls=lambda row: row["metadata"]["calls"])
    ordered = [(job.task_id, job.sample) for job in longest_first(jobs, hint)]
    assert ordered == [
        ("t2", 0), ("t2", 1), ("t4", 0), ("t4", 1), ("t0", 0), ("t0", 1), ("t3", 0), ("t3", 1),
        ("t1", 0), ("t1", 1),
    ]  # fmt: skip
    assert longest_first(jobs, object()) == jobs  # a factory that cannot tell: the plan's order
