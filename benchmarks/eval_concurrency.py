"""`t3rl eval` throughput: bounded concurrency against the reference engine with a fixed latency.

The scripted reference engine with a simulated per-call latency stands in for a remote SGLang server;
all 300 BFCL test tasks (or `--per-category` of each category) are evaluated with `--concurrency`
episodes in flight, through `run_eval` as `t3rl eval` runs it (engine check, trajectories and summary
written, all inside the timed wall). One process runs every eval; each starts with the previous one's
garbage collected (outside the clock), as each `t3rl eval` starts in a process of its own.

The ideal is the physical bound of the work: every model call takes exactly the latency and all
`--concurrency` slots are busy from the first call to the last, i.e. (model calls x latency) /
concurrency. It is not the makespan of any particular schedule: the eval's own order of episodes (a
long one started last), an idle slot while tasks remain and the loop's own CPU all count against it.
Each condition (idle, one core kept busy by a spinning child process) runs several repeats; medians
(min–max) of ideal / wall, and each run's ratio beside the machine's 1-minute load average as it
started (the machine is shared: a figure means little without it), and the median process CPU of a
run (every thread: the loop and the encode workers; with one core kept busy the eval has one core
left, and this CPU is a bound on its wall). Target: >= 0.92 in both conditions. The last line is the
ratio.

`--conditions busy-own-session` is a third condition, for diagnosis and not part of the target: the
spinner in a session of its own (benchmarks/busy_core.py), which the kernel's autogroups weigh apart
from the eval's session, as a neighbour from another terminal; in "busy" the spinner is the eval's
own child and shares the eval's session's weight.

    .venv/bin/python benchmarks/eval_concurrency.py [--per-category N] [--latency 0.05] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from busy_core import condition, label

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import TRAJECTORIES_FILE, run_eval, select_rows

TARGET = 0.92


def bfcl_eval_runtime() -> RuntimeConfig:
    """BFCL multi-turn with the progress reward on the tiny Qwen3 tokenizer, as the quickstart's eval."""
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": {"max_new_tokens": 32768},
        }
    )


def timed_eval(
    runtime: RuntimeConfig, rows: list, latency: float, concurrency: int
) -> tuple[float, float, int]:
    """(wall seconds, process CPU seconds: every thread, model calls) of one eval."""
    # Here, not at the top: eval_wall_parts.py imports this module's runtime into trees before it.
    from t3rl_core.eval import loop

    config = EvalConfig.model_validate(
        {"engine": {"name": "reference", "latency_s": latency}, "concurrency": concurrency}
    )
    # Each eval starts as `t3rl eval`'s own process does, with no earlier eval's garbage: what the
    # previous run left (its chat format, caches, parsers, worlds; ~40k objects) would be walked and
    # freed by a collection in the middle of this one, a pause no `t3rl eval` has.
    gc.collect()
    # Its progress lines go to a buffer, as to a log file.
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        start, cpu = time.perf_counter(), time.process_time()
        loop.run(run_eval(runtime, config, rows, Path(out), show_progress=False))  # t3rl eval's loop
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        lines = (Path(out) / TRAJECTORIES_FILE).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    if any(record["status"] != "completed" for record in records):
        raise SystemExit("an episode did not complete: the timing would not be of the whole work")
    return wall, cpu, sum(record["num_model_calls"] for record in records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-category", type=int, default=None, help="default: every test task")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--conditions", nargs="+", choices=["idle", "busy", "busy-own-session"], default=["idle", "busy"]
    )
    args = parser.parse_args()

    runtime = bfcl_eval_runtime()
    test_rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
    rows = select_rows(test_rows, EvalConfig(limit_per_category=args.per_category))

    cpu_time, _, _ = timed_eval(runtime, rows, 0.0, 1)  # also the warm-up: imports, API classes, parsers
    met, medians = True, []
    for name in args.conditions:
        busy, own_session = name != "idle", name == "busy-own-session"
        ratios, walls, ideal, loads, cpus = [], [], 0.0, [], []
        with condition(busy, own_session):
            for _ in range(args.repeats):
                load = os.getloadavg()[0]
                wall, cpu, calls = timed_eval(runtime, rows, args.latency, args.concurrency)
                cpus.append(cpu)
                ideal = calls * args.latency / args.concurrency
                walls.append(wall)
                ratios.append(ideal / wall)
                loads.append(f"{ideal / wall:.2f} (load {load:.1f})")
        median = statistics.median(ratios)
        met &= median >= TARGET or own_session  # the diagnostic condition is no part of the target
        shown = label(busy, own_session)
        medians.append(f"{shown} {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
        print(
            f"{shown}: {len(rows)} tasks, {calls} model calls, {args.concurrency} in flight, engine "
            f"{args.latency * 1000:.0f} ms per call; ideal {ideal:.2f} s; wall median "
            f"{statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}); process CPU "
            f"median {statistics.median(cpus):.2f} s; each run's "
            f"ratio, with the 1-minute load average as it started: {', '.join(loads)}"
        )
    print(f"loop's own cost at latency 0, 1 in flight: {cpu_time:.2f} s")
    print(f"target ideal / wall >= {TARGET}: {'met' if met else 'NOT met'}")
    print(f"ratio ideal / wall: median {'; '.join(medians)}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
