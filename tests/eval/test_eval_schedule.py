"""The order an eval starts its episodes in: the planned starts of a packing of the episodes' model calls
into the slots, by the env factory's count."""

import asyncio
import heapq
from types import SimpleNamespace

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import make_factory
from t3rl_core.eval.runner import plan_jobs, run_eval
from t3rl_core.eval.schedule import pack, planned_order, start_order
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


def list_schedule_end(lengths: list[int], slots: int) -> int:
    """When the last job ends, each started in turn on the slot freed first."""
    free = [0] * slots
    for length in lengths:
        heapq.heappush(free, heapq.heappop(free) + length)
    return max(free)


def test_with_one_slot_the_longest_episode_starts_first_and_the_bfcl_count_is_exact(tmp_path):
    rows = bfcl_rows(per_category=3)
    factory = make_factory(BFCLEnvConfig())
    expected = {row["metadata"]["index"]: factory.expected_model_calls(row) for row in rows}
    # One episode in flight: the trajectories are written in the order the episodes started.
    asyncio.run(run_eval(bfcl_runtime(), reference_config(1), rows, tmp_path, show_progress=False))
    records = read_records(tmp_path)
    calls = [record["num_model_calls"] for record in records]
    assert len(calls) == len(rows) and calls == sorted(expected.values(), reverse=True)
    assert all(record["num_model_calls"] == expected[record["task_id"]] for record in records)
    assert all(record["success"] for record in records)


def test_the_packing_ends_every_slot_together_where_longest_first_leaves_a_tail():
    lengths = [3, 3, 2, 2, 2]
    packed = sorted(sorted(lengths[i] for i in sequence) for sequence in pack(lengths, 2))
    assert packed == [[2, 2, 2], [3, 3]]
    assert list_schedule_end(sorted(lengths, reverse=True), 2) == 7
    assert list_schedule_end([lengths[i] for i in planned_order(lengths, 2)], 2) == 6


def test_started_in_the_planned_order_each_freed_slot_takes_the_job_the_plan_gave_it():
    lengths = [(7 * i) % 11 + 2 for i in range(60)]
    for slots in (1, 3, 8, 60, 100):
        longest_total = max(sum(lengths[i] for i in sequence) for sequence in pack(lengths, slots))
        order = planned_order(lengths, slots)
        assert sorted(order) == list(range(len(lengths)))
        assert list_schedule_end([lengths[i] for i in order], slots) == longest_total
        assert longest_total <= max(max(lengths), -(-sum(lengths) // slots)) + 1


def test_a_job_of_unknown_length_counts_as_the_mean_and_without_a_hint_the_plan_order_stays():
    rows = [{"metadata": {"index": f"t{i}", "calls": calls}} for i, calls in enumerate([2, None, 6, 3, 6])]
    jobs = plan_jobs(rows, reference_config())
    hint = SimpleNamespace(expected_model_calls=lambda row: row["metadata"]["calls"])
    # One slot: longest first, the unknown one (t1) as the mean of 2, 6, 3, 6 (4), before t3.
    assert [job.task_id for job in start_order(jobs, hint, 1)] == ["t2", "t4", "t1", "t3", "t0"]
    assert start_order(jobs, object(), 4) == jobs  # a factory that cannot tell: the plan's order
    nothing = SimpleNamespace(expected_model_calls=lambda row: None)
    assert start_order(jobs, nothing, 4) == jobs
