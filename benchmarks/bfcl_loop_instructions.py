"""Instructions per model call of BFCL episodes in the steady state of `bfcl_loop_cpu.py` (callgrind).

CPU time per call on the shared 2-core machine moves by ±20 % with the neighbours' load (the same tree
printed 0.33 and 0.50 ms); instruction counts do not, so they compare two trees. A child process builds
a runner, plays a few rows (first imports), primes every tool list's prompt head, then plays `--rows`
rows it has never seen through t3rl's loop, under `valgrind --tool=callgrind --instr-atstart=no`; this
script switches instrumentation on (`callgrind_control -i on`) for those rows only. The count includes
the scripted engine's own work (its oracle and its text's ids: ~a third), which is the same in both
trees unless the engine changed. `--pythonpath DIR` runs another tree (a `git archive` snapshot).
The rows counted start at the test set's row `--start` (100: short-context rows); bfcl_loop_cpu.py
plays all 300, whose last 75 are long-context rows (`--start 225`), where results and observations
carry bfcl-eval's ~30k-character listings. A diagnostic, not a target: bfcl_loop_cpu.py holds the target.

    .venv/bin/python benchmarks/bfcl_loop_instructions.py [--rows 40] [--start 100] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from bfcl_common import test_rows, trained_tokenizer
from callgrind_window import counted

# Runs in the child: argv = tree, tokenizer dir, rows, scratch dir (ready / go / done / end files), first row.
CHILD = r"""
import asyncio, os, sys, time
from pathlib import Path
tree, tokenizer, count, scratch = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
start = int(sys.argv[5])
sys.path.insert(0, os.path.join(tree, "benchmarks"))
from bfcl_common import EngineCpu, loop_cpu, make_runner, t3rl_episode, test_rows
from bfcl_loop_cpu import prime_heads

async def play(runner, engine, rows):
    calls = 0
    for row in rows:
        calls += (await loop_cpu(t3rl_episode, runner, engine, row))[1]
    return calls

def wait(name):
    while not (scratch / name).exists():
        time.sleep(0.05)

every = test_rows()
warm = make_runner("qwen3", tokenizer, 0.0)
asyncio.run(play(warm, EngineCpu(warm), every[::25]))
runner = make_runner("qwen3", tokenizer, 0.0)
engine = EngineCpu(runner)
prime_heads(runner, every)
def put(name, text):  # whole or not there: the parent reads a file once it exists
    (scratch / (name + ".tmp")).write_text(text)
    os.replace(scratch / (name + ".tmp"), scratch / name)

put("ready", str(os.getpid()))
wait("go")
calls = asyncio.run(play(runner, engine, every[start : start + count]))
put("done", str(calls))
wait("end")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--start", type=int, default=100, help="the first test row counted")
    parser.add_argument("--pythonpath", default=str(Path(__file__).resolve().parent.parent))
    args = parser.parse_args()
    tree = str(Path(args.pythonpath).resolve())
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        tokenizer = trained_tokenizer("qwen3", test_rows(), scratch)
        out = scratch / "callgrind.out"
        # PYTHONSAFEPATH: `python -c` puts the working directory first on sys.path, so run from a
        # checkout the child imported that checkout's t3rl_core whatever --pythonpath said.
        env = {**os.environ, "PYTHONPATH": tree, "PYTHONHASHSEED": "0", "PYTHONSAFEPATH": "1"}
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        command += [
            sys.executable,
            "-c",
            CHILD,
            tree,
            str(tokenizer),
            str(args.rows),
            str(scratch),
            str(args.start),
        ]
        with counted(command, env, scratch):
            calls = int((scratch / "done").read_text())
        summary = re.search(r"^totals: (\d+)", out.read_text(), re.MULTILINE)
        if summary is None:
            raise SystemExit("callgrind wrote no totals line")
        instructions = int(summary.group(1))
    print(
        f"tree {tree}: {args.rows} new rows from row {args.start}, {calls} model calls, "
        f"{instructions:,} instructions"
    )
    print(f"instructions per model call (the scripted engine's included): {instructions / calls:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
