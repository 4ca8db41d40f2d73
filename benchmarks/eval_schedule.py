"""The eval's start order, simulated: how close each order comes to the physical bound of the work.

The 300 BFCL test tasks (each episode's model calls as `expected_model_calls` gives them) run on
`--slots` slots against an engine of `--latency` per call, overshooting it by `--overshoot` (asyncio's
timer resolution). One event loop serves every episode: `--call-cpu` of loop CPU per model call and
`--episode-cpu` at each episode's start (env, prompt) and at its end (scoring, the trajectory line),
served one at a time. Printed: ideal / makespan per order, where ideal = model calls x latency / slots
(every slot busy from the first call to the last), for the plan's order, strictly longest first, and
longest and shortest alternately (the order before `t3rl_core.eval.schedule`) and
`t3rl_core.eval.schedule.start_order` (the planned start of a packing into the slots), without loop
costs and with them. A model, not a measurement: `eval_concurrency.py` measures the real eval.

    .venv/bin/python benchmarks/eval_schedule.py [--call-cpu 0.0005] [--episode-cpu 0.0012]
"""

from __future__ import annotations

import argparse
import heapq
import sys

from bfcl_common import test_rows

from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import make_factory
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import EpisodeJob, plan_jobs
from t3rl_core.eval.schedule import start_order


def makespan(calls: list[int], slots: int, latency: float, call_cpu: float, episode_cpu: float) -> float:
    """Episodes started in order on free slots; the loop serves their CPU work first come, first served."""
    events: list[tuple[float, int, str, int]] = []  # (time, sequence, what, calls left)
    waiting, sequence, loop_free, end = list(calls), 0, 0.0, 0.0
    for _ in range(min(slots, len(waiting))):
        heapq.heappush(events, (0.0, sequence, "start", waiting.pop(0)))
        sequence += 1
    while events:
        at, _, what, left = heapq.heappop(events)
        begin = max(at, loop_free)
        if what == "start" or left > 1:
            loop_free = begin + call_cpu + (episode_cpu if what == "start" else 0.0)
            heapq.heappush(
                events, (loop_free + latency, sequence, "call", left if what == "start" else left - 1)
            )
        else:
            loop_free = end = begin + episode_cpu
            if waiting:
                heapq.heappush(events, (loop_free, sequence, "start", waiting.pop(0)))
        sequence += 1
    return end


def alternating(longest: list[EpisodeJob]) -> list[EpisodeJob]:
    """The longest, the shortest, the second longest, the second shortest, …"""
    ordered, low, high = [], 0, len(longest) - 1
    while low <= high:
        ordered.append(longest[low])
        if low < high:
            ordered.append(longest[high])
        low, high = low + 1, high - 1
    return ordered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--overshoot", type=float, default=0.0004)
    parser.add_argument("--call-cpu", type=float, default=0.0005)
    parser.add_argument("--episode-cpu", type=float, default=0.0012)
    args = parser.parse_args()
    rows = test_rows()
    factory = make_factory(BFCLEnvConfig())
    jobs = plan_jobs(rows, EvalConfig())
    length = {job.task_id: factory.expected_model_calls(job.row) or 0 for job in jobs}
    longest = sorted(jobs, key=lambda job: -length[job.task_id])
    orders = {
        "plan order": jobs,
        "longest first": longest,
        "alternating": alternating(longest),
        "start_order": start_order(jobs, factory, args.slots),
    }
    ideal = sum(length.values()) * args.latency / args.slots
    for costs, (call_cpu, episode_cpu) in (
        ("no loop costs", (0.0, 0.0)),
        ("loop costs", (args.call_cpu, args.episode_cpu)),
    ):
        ratios = {
            name: ideal
            / makespan(
                [length[job.task_id] for job in order],
                args.slots,
                args.latency + args.overshoot,
                call_cpu,
                episode_cpu,
            )
            for name, order in orders.items()
        }
        print(f"{costs:14s} " + "  ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
