"""The order an eval starts its episodes in: the planned starts of a packing of the episodes' model calls
into the slots, by the env factory's count."""

import asyncio
import heapq
from types import SimpleNamespace

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import make_factory
from t3rl_core.eval.runner import plan_jobs, run_eval
from t3rl_core.eval.schedule import pack, planned_order, shared_first, start_order, tool_names
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


def test_each_slot_starts_with_a_group_many_slots_share_and_the_plan_still_ends_together():
    lengths = [(7 * i) % 11 + 2 for i in range(60)]
    groups = [(5 * i) % 7 for i in range(60)]
    for slots in (1, 3, 8, 60, 100):
        longest_total = max(sum(lengths[i] for i in sequence) for sequence in pack(lengths, slots))
        order = planned_order(lengths, slots, groups)
        assert sorted(order) == list(range(len(lengths)))
        assert list_schedule_end([lengths[i] for i in order], slots) == longest_total
    first_wave = [groups[i] for i in planned_order(lengths, 8, groups)[:8]]
    plain_wave = [groups[i] for i in planned_order(lengths, 8)[:8]]
    assert len(set(first_wave)) < len(set(plain_wave)) and first_wave.count(first_wave[0]) >= 4


def test_shared_first_covers_every_sequence_greedily_and_keeps_the_rest_in_order():
    groups = ["a", "b", "c", "b", "b", "d", "e", "f"]
    # b is in three sequences, then e (or f) in the last; an empty sequence (pack leaves some) stays.
    sequences = [[0, 1], [2, 3], [4, 5], [6, 7], []]
    assert shared_first(sequences, groups) == [[1, 0], [3, 2], [4, 5], [6, 7], []]
    assert planned_order([5, 5, 5, 5], 3, ["a", "b", "b", "c"]) == [1, 2, 0, 3]


def test_the_bfcl_test_tasks_first_wave_needs_a_few_tool_lists():
    jobs = plan_jobs(bfcl_rows(per_category=1000), reference_config())
    factory = make_factory(BFCLEnvConfig())
    plain = {tool_names(job.row) for job in start_order(jobs, factory, 32)[:32]}
    shared = {tool_names(job.row) for job in start_order(jobs, factory, 32, tool_names)[:32]}
    assert len(jobs) == 300 and len(shared) * 3 <= len(plain)


def test_tool_names_of_any_tool_shape():
    function = {"type": "function", "function": {"name": "ls", "parameters": {}}}
    row = {"metadata": {"tools": [function, {"name": "cd"}, "raw", {"function": "odd"}]}}
    assert tool_names(row) == ("ls", "cd", "raw", "None")
    assert tool_names({}) == () and tool_names({"metadata": {"tools": None}}) == ()
    # OpenAI tools only (every BFCL row), read in one pass: the same names.
    assert tool_names({"metadata": {"tools": [function, {"function": {"name": "cd"}}]}}) == ("ls", "cd")
    assert tool_names({"metadata": {"tools": [{"function": {}}, function]}}) == ("None", "ls")
