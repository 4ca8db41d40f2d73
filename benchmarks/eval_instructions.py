"""Instructions one `eval_concurrency.py` eval executes, per model call (callgrind): its CPU, load-free.

`eval_concurrency.py`'s ratio on the shared 2-core machine moves with the neighbours' load far more than
with a change to the eval loop; an instruction count does not. A child process runs the benchmark's
warm-up eval (latency 0, one in flight: imports, API classes, parsers), collects its garbage, then runs
one eval of all 300 BFCL test tasks with the reference engine at `--latency` and `--concurrency` in
flight through `run_eval`, under `valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`
with instrumentation switched on (`callgrind_control -i on`) for that eval only. Printed: the model
calls, the instructions of every thread and of the event loop's thread alone (the encode workers are
the rest), each per model call. Valgrind runs one thread at a time and ~50x slower, so the eval's
timers all fire late: the count is of the work, not of a schedule. `--pythonpath DIR` runs another
tree (a `git archive` snapshot), to compare two trees. A diagnostic, not a target: eval_concurrency.py
holds the target.

    .venv/bin/python benchmarks/eval_instructions.py [--latency 0.05] [--concurrency 32] [--pythonpath DIR]
        [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from callgrind_window import counted, wait_for

# Runs in the child: argv = tree, latency, concurrency, scratch dir (ready / go / done / end files).
CHILD = r"""
import asyncio, contextlib, gc, io, json, os, sys, tempfile, time
from pathlib import Path
tree, latency, concurrency, scratch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
sys.path.insert(0, os.path.join(tree, "benchmarks"))
from eval_concurrency import bfcl_eval_runtime, timed_eval
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.runner import TRAJECTORIES_FILE, run_eval

def wait(name):
    while not (scratch / name).exists():
        time.sleep(0.05)

def put(name, text):  # whole or not there: the parent reads a file once it exists
    (scratch / (name + ".tmp")).write_text(text)
    os.replace(scratch / (name + ".tmp"), scratch / name)

runtime = bfcl_eval_runtime()
rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
timed_eval(runtime, rows, 0.0, 1)
config = EvalConfig.model_validate(
    {"engine": {"name": "reference", "latency_s": latency}, "concurrency": concurrency}
)
gc.collect()
put("ready", str(os.getpid()))
wait("go")
with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
    asyncio.run(run_eval(runtime, config, rows, Path(out), show_progress=False))
    put("done", "")
    lines = (Path(out) / TRAJECTORIES_FILE).read_text().splitlines()
calls = sum(json.loads(line)["num_model_calls"] for line in lines)
put("calls", str(calls))
wait("end")
"""


def _totals(dumps: list[Path]) -> list[int]:
    """Each thread's instruction total, in thread order (the main thread's file first)."""
    totals = []
    for dump in sorted(dumps, key=lambda path: int(path.name.rpartition("-")[2])):
        found = re.search(r"^totals: (\d+)", dump.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"callgrind wrote no totals line in {dump}")
        totals.append(int(found.group(1)))
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--pythonpath", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--keep", type=Path, help="copy the callgrind dumps here (for callgrind_annotate)")
    args = parser.parse_args()
    tree = str(Path(args.pythonpath).resolve())
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        out = scratch / "callgrind.out"
        env = {**os.environ, "PYTHONPATH": tree, "PYTHONHASHSEED": "0"}
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes"]
        command += [f"--callgrind-out-file={out}", sys.executable, "-c", CHILD, tree]
        command += [str(args.latency), str(args.concurrency), str(scratch)]
        with counted(command, env, scratch) as child:
            wait_for(scratch / "calls", child)
            calls = int((scratch / "calls").read_text())
        dumps = list(scratch.glob("callgrind.out-*"))
        totals = _totals(dumps)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for dump in dumps:
                shutil.copy(dump, args.keep / dump.name)
    every, loop = sum(totals), totals[0]
    print(
        f"tree {tree}: one eval, {calls} model calls, latency {args.latency * 1000:g} ms, "
        f"{args.concurrency} in flight; {every:,} instructions ({loop:,} on the event loop's thread)"
    )
    print(f"instructions per model call: every thread {every / calls:,.0f}; event loop {loop / calls:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
