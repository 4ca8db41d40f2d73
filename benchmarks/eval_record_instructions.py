"""Instructions `t3rl eval` spends writing its records (callgrind): per record, load-free.

Each finished episode's record is turned into its trajectory line (JSON, its token lists by orjson, the
credential masks), hashed for the resume index and appended to both files: on the event loop, or, in an
eval of many episodes, by a child process the loop sends each record's JSON texts and list bytes to
(t3rl_core.eval.record_writer; `--writer eval` counts the eval's own process only). A first
process runs `eval_concurrency.py`'s eval of all 300 BFCL test tasks (latency 0, 32 in flight) and keeps
each episode's record; a second, under `valgrind --tool=callgrind --dump-before=os_getppid`, writes
those records as the eval does (the tree's own `record_bytes` into a binary file, or `record_line` into
a text one for a tree from before it) and counts that alone, between two `os.getppid()` markers. The
records come from the tree given, so two trees compare their own records. Printed: the instructions of
writing all records and per record, and the sha256 of the two files written (equal trees write equal
files, timings aside: the records carry the first process's timings, so compare trees on one capture
with `--records FILE`). A diagnostic, not a target.

    .venv/bin/python benchmarks/eval_record_instructions.py [--pythonpath DIR] [--records FILE]
        [--writer eval|loop]
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CAPTURE = r"""
import asyncio, contextlib, io, os, pickle, sys, tempfile
from pathlib import Path
sys.path.insert(0, os.path.join(sys.argv[1], "benchmarks"))
from eval_concurrency import bfcl_eval_runtime
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.data import build_rows
from t3rl_core.eval import runner
from t3rl_core.eval.config import EvalConfig

rows = [row for row in build_rows(BFCLEnvConfig()) if row["metadata"]["split"] == "test"]
kept, played = [], runner._run_episode

async def run_episode(engine_runner, job, *args):
    record = await played(engine_runner, job, *args)
    kept.append(record)
    return record

runner._run_episode = run_episode
config = EvalConfig.model_validate({"engine": {"name": "reference", "latency_s": 0.0}, "concurrency": 32})
with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
    asyncio.run(runner.run_eval(bfcl_eval_runtime(), config, rows, Path(out), show_progress=False))
Path(sys.argv[2]).write_bytes(pickle.dumps(kept))
"""

COUNT = r"""
import hashlib, os, pickle, sys, tempfile
from pathlib import Path
from t3rl_core.eval import jsonl, resume

records = pickle.loads(Path(sys.argv[1]).read_bytes())
out = Path(tempfile.mkdtemp())
try:
    from t3rl_core.eval import record_writer
except ImportError:  # a tree from before it: every line made and written on the loop
    record_writer = None
if record_writer is not None and sys.argv[2] == "eval":
    for record in records[:4]:
        jsonl.record_bytes(record)  # warm-up: patterns compiled, caches filled
    lines = record_writer.writer(out / "lines", out / "index", len(records))
    os.getppid()
    for number, record in enumerate(records):
        lines.write((str(number), 0, 0), record, "job", 1)
    os.getppid()
    lines.close()
else:
    line, mode = (jsonl.record_bytes, "ab") if hasattr(jsonl, "record_bytes") else (jsonl.record_line, "a")
    for record in records[:4]:
        line(record)  # warm-up: patterns compiled, caches filled
    with open(out / "lines", mode) as sink, open(out / "index", "a") as index:
        os.getppid()
        for number, record in enumerate(records):
            resume.write(sink, index, (str(number), 0, 0), line(record), "job", 1)
        os.getppid()
print(*(hashlib.sha256((out / name).read_bytes()).hexdigest() for name in ("lines", "index")))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythonpath", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--records", type=Path, help="a capture to reuse (written there when missing)")
    parser.add_argument(
        "--writer",
        choices=["eval", "loop"],
        default="eval",
        help="eval: the writer the tree's eval takes for this many records (a child process masks and "
        "writes them: only what the eval's own process spends is counted); loop: every line on the loop",
    )
    args = parser.parse_args()
    tree = str(Path(args.pythonpath).resolve())
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as scratch:
        env |= {"PYTHONPATH": tree, "PYTHONHASHSEED": "0", "PYTHONPYCACHEPREFIX": f"{scratch}/pyc"}
        records = args.records.resolve() if args.records else Path(scratch) / "records.pickle"
        if not records.exists():
            capture = [sys.executable, "-c", CAPTURE, tree, str(records)]
            subprocess.run(capture, cwd=scratch, env=env, check=True)
        child = [sys.executable, "-c", COUNT, str(records), args.writer]
        subprocess.run(child, cwd=scratch, env=env, check=True, stdout=subprocess.DEVNULL)  # bytecode written
        dumps = f"{scratch}/callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-before=os_getppid"]
        done = subprocess.run(
            [*valgrind, f"--callgrind-out-file={dumps}", *child],
            cwd=scratch,  # a `python -c` child imports from its working directory first
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        # Dump 2 is what ran between the two markers.
        found = re.search(r"^totals: (\d+)", Path(f"{dumps}.2").read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"callgrind wrote no totals line in {dumps}.2")
        count = len(pickle.loads(records.read_bytes()))
    total = int(found.group(1))
    print(f"tree {tree}: {count} records written, {total:,} instructions, {total / count:,.0f} a record")
    print(f"sha256 of the lines and the index written: {done.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
