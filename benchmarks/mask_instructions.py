"""Instructions the masking of eval records costs a record (callgrind).

Every line of trajectories.jsonl passes `mask_episode_text` (its episode's text) and `mask_text` (what
every other file and line t3rl writes passes). This counts both over the lines of the given files in
one process: a warm-up over the first 4 lines (imports, patterns compiled), then each function over
every line between two `os.getppid()` markers (`valgrind --tool=callgrind --dump-before=os_getppid`).
Instruction counts do not move with the machine's load, so they compare two trees: `--pythonpath DIR`
runs another one (e.g. `git archive HEAD~1 t3rl_core launch` unpacked into DIR). The secrets page's
figures were taken on the quickstart's 48 eval records (`runs/quickstart/*/stages/eval_*/
trajectories.jsonl`, 1.77 MB). Also counted, as a third figure: what the record child masks of each
record (t3rl_core.eval.jsonl: the JSON of its fields but the token lists, by `mask_revealed`, and each
episode text, by `mask_episode_text`; the parts made before the count). A diagnostic, not a target.

    .venv/bin/python benchmarks/mask_instructions.py FILE [FILE ...] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Runs in the child: argv[1:] are the record files.
CHILD = r"""
import json, os, sys
from t3rl_core.eval.jsonl import record_parts
from t3rl_core.secret import mask_episode_text, mask_revealed, mask_text

lines = [line for name in sys.argv[1:] for line in open(name, encoding="utf-8")]
parts = [record_parts(json.loads(line)) for line in lines]
for line, part in zip(lines[:4], parts):
    mask_episode_text(line), mask_text(line), mask_revealed(part.rest)
os.getppid()
for line in lines:
    mask_episode_text(line)
os.getppid()
for line in lines:
    mask_text(line)
os.getppid()
for part in parts:
    mask_revealed(part.rest)
    for _, text in part.episode:
        mask_episode_text(text)
os.getppid()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--pythonpath", default=None)
    args = parser.parse_args()
    files = [os.path.abspath(name) for name in args.files]
    records = sum(len(Path(name).read_text(encoding="utf-8").splitlines()) for name in files)
    with tempfile.TemporaryDirectory() as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"PYTHONPYCACHEPREFIX": f"{scratch}/pyc", "PYTHONPATH": args.pythonpath or os.getcwd()}
        dumps = f"{scratch}/callgrind.out"
        child = [sys.executable, "-c", CHILD, *files]
        valgrind = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-before=os_getppid"]
        valgrind.append(f"--callgrind-out-file={dumps}")
        # The first run writes the bytecode cache, the second is counted.
        for command in (child, [*valgrind, *child]):
            done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
        parts = sorted(glob.glob(dumps + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        counts = [int(re.search(r"^(?:summary|totals): (\d+)", Path(p).read_text(), re.M)[1]) for p in parts]
    # Dumps: up to the first marker, mask_episode_text's pass, mask_text's pass, the record child's
    # masks, after the last.
    print(f"{counts[1] / records / 1e6:9.2f} M  mask_episode_text a record ({records} records)")
    print(f"{counts[2] / records / 1e6:9.2f} M  mask_text a record")
    print(f"{counts[3] / records / 1e6:9.2f} M  the record child's masks a record (its parts)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
