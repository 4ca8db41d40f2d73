"""Run the issue-13 benchmarks and regenerate the benchmark table of docs/explanation/performance.md.

Each benchmark runs with its defaults in a fresh process; its last line (the ratio) and its exit status
(0 = target met) go into the table between the `<!-- benchmark-table -->` markers of that page. Timings
depend on the machine and its load: rerun on a quiet machine before comparing with the targets.

    .venv/bin/python benchmarks/readme_table.py [--only NAME ...] [--readme PAGE.md] > table.log
    .venv/bin/python benchmarks/readme_table.py --from-log table.log    # the table of an earlier run
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
START, END = "<!-- benchmark-table -->", "<!-- /benchmark-table -->"
# script → (what it measures, target)
BENCHMARKS = {
    "bfcl_loop_cpu.py": (
        "BFCL episode-loop process CPU per model call, 1 ms engine, new rows, idle / one core busy",
        "≤ 0.5 ms (steady state, both)",
    ),
    "concurrency.py --episodes 256": (
        "256 concurrent episodes, BFCL-size prompts, 50 ms engine",
        "≤ 1.25 × ideal",
    ),
    "bfcl_concurrency.py": ("256 concurrent BFCL test episodes, 50 ms engine", "≤ 1.25 × ideal"),
    "eval_concurrency.py": (
        "`t3rl eval`, reference engine, 50 ms, concurrency 32, all 300 test tasks, idle / one core busy",
        "≥ 0.92 of model calls × latency / 32",
    ),
    "tau2_episode.py": (
        "tau2 first episode of a task, CPU: build, steps, scoring (retail, airline, telecom), idle / busy",
        "≤ 0.1 s, ≤ 0.3 s, reported; identical",
    ),
    "cli_startup.py": (
        "`t3rl plan` / `t3rl validate` +experiment=stage2_bfcl, no cache, idle / one core busy",
        "≤ 1.5 × in one process (CPU, both); forked ≤ 2.0 × / ≤ 1.8 × (idle)",
    ),
    "eval_startup.py": ("`t3rl eval` launch to first finished episode", "≤ 1.0 s, no torch"),
    "sandbox_throughput.py": (
        "local sandbox `print(1)` cells/s, concurrency 2 and 4",
        "≥ 70/s and ≥ 1.0 × bare `python -c`",
    ),
}


def run(command: str) -> tuple[str, bool, float]:
    script, *args = command.split()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, cwd=HERE.parent
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    last = lines[-1] if lines else (done.stderr.strip().splitlines() or ["no output"])[-1]
    return last, done.returncode == 0, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", help="scripts to run (the other rows keep their text)")
    parser.add_argument(
        "--readme", type=Path, default=HERE.parent / "docs" / "explanation" / "performance.md"
    )
    parser.add_argument("--from-log", type=Path, help="this script's output of an earlier run: no rerun")
    args = parser.parse_args()
    readme = args.readme.read_text()
    if START not in readme or END not in readme:
        raise SystemExit(f"{args.readme} has no {START} … {END} section")
    begin, end = readme.index(START) + len(START), readme.index(END)
    current = readme[begin:end]
    rows = {}
    for line in current.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`benchmarks/"):
            rows[cells[0]] = line
    logged = {}
    if args.from_log:
        for line in args.from_log.read_text().splitlines():
            found = re.fullmatch(r"(.+?): (.*) \((met|NOT met), \d+ s\)", line)
            if found:
                logged[found[1]] = (found[2], found[3] == "met")
    for command, (what, target) in BENCHMARKS.items():
        key = f"`benchmarks/{command}`"
        if (args.only and command.split()[0] not in args.only) or (args.from_log and command not in logged):
            continue
        if args.from_log:
            last, met = logged[command]
        else:
            last, met, seconds = run(command)
            print(f"{command}: {last} ({'met' if met else 'NOT met'}, {seconds:.0f} s)", flush=True)
        last = re.sub(r"\s+", " ", last).replace("|", "/")
        rows[key] = f"| {key} | {what} | {target} | {last} | {'yes' if met else 'no'} |"
    table = [
        "| benchmark | measures | target | last line of its output | met |",
        "|---|---|---|---|---|",
        *(rows[f"`benchmarks/{c}`"] for c in BENCHMARKS if f"`benchmarks/{c}`" in rows),
    ]
    args.readme.write_text(readme[:begin] + "\n" + "\n".join(table) + "\n" + readme[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
