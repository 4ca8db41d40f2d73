"""`t3rl eval` throughput: bounded concurrency against the reference engine with a fixed latency.

The scripted reference engine with a simulated per-call latency stands in for a remote SGLang server;
BFCL test tasks (`--per-category` of each category) are evaluated with `--concurrency` episodes in
flight, through `run_eval` as `t3rl eval` runs it (trajectories and summary written). The ideal is
the same jobs, in the same order, on `--concurrency` slots, each taking exactly its model calls x
latency (the loop's own CPU hidden entirely): the makespan of that schedule. Several repeats; medians
(min–max) of ideal / wall. Target: >= 0.92. The last line is the ratio.

    .venv/bin/python benchmarks/eval_concurrency.py [--per-category 10] [--latency 0.05] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import TRAJECTORIES_FILE, plan_jobs, run_eval, select_rows

TARGET = 0.92


def timed_eval(
    runtime: RuntimeConfig, rows: list[dict], latency: float, concurrency: int
) -> tuple[float, list[dict]]:
    config = EvalConfig.model_validate(
        {"engine": {"name": "reference", "latency_s": latency}, "concurrency": concurrency}
    )
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        asyncio.run(run_eval(runtime, config, rows, Path(out), show_progress=False))
        wall = time.perf_counter() - start
        records = [json.loads(line) for line in (Path(out) / TRAJECTORIES_FILE).read_text().splitlines()]
    return wall, records


def ideal_makespan(jobs: list, calls: dict[tuple[str, int], int], latency: float, slots: int) -> float:
    """Jobs started in order on the first free slot (as the eval's semaphore does), latency only."""
    free = [0.0] * slots
    end = 0.0
    for job in jobs:
        start = heapq.heappop(free)
        finish = start + calls[(job.task_id, job.sample)] * latency
        heapq.heappush(free, finish)
        end = max(end, finish)
    return end


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": {"max_new_tokens": 32768},
        }
    )
    test_rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
    config = EvalConfig(limit_per_category=args.per_category, concurrency=args.concurrency)
    rows = select_rows(test_rows, config)
    jobs = plan_jobs(rows, config)

    cpu_time, _ = timed_eval(runtime, rows, 0.0, 1)  # also the warm-up: imports, API classes, parsers
    ratios, walls, ideal = [], [], 0.0
    for _ in range(args.repeats):
        wall, records = timed_eval(runtime, rows, args.latency, args.concurrency)
        calls = {(r["task_id"], r["sample"]): r["num_model_calls"] for r in records}
        ideal = ideal_makespan(jobs, calls, args.latency, args.concurrency)
        walls.append(wall)
        ratios.append(ideal / wall)
    median = statistics.median(ratios)
    print(
        f"{len(jobs)} episodes, {args.concurrency} in flight, engine {args.latency * 1000:.0f} ms per call; "
        f"loop's own cost at latency 0, 1 in flight: {cpu_time:.2f} s"
    )
    print(
        f"ideal {ideal:.2f} s; wall median {statistics.median(walls):.2f} s "
        f"(min {min(walls):.2f}, max {max(walls):.2f})"
    )
    met = median >= TARGET
    print(f"target ideal / wall >= {TARGET}: {'met' if met else 'NOT met'}")
    print(f"ratio ideal / wall: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
