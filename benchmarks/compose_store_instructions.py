"""Instructions the composition cache spends on a command line it has not seen (callgrind).

A new command line's composition is looked up (a miss), checked for secrets and stored; this counts that
work, without the composition itself, for 20 distinct command lines (5 experiments × 4 models) in one
process: each is composed first with the cache off, then `cached_compose` is given that result on a fresh
cache directory between two `os.getppid()` markers (`valgrind --tool=callgrind --dump-before=os_getppid`),
so one dump counts every line's lookup, scan and store; a second one counts the secret scan alone
(`compose_cache._holds_secret`) of each line again. Instruction counts do not move with the machine's
load, so they compare two trees: `--pythonpath DIR` runs another one (e.g. `git archive` of a commit
before a change). A diagnostic, not a target.

    .venv/bin/python benchmarks/compose_store_instructions.py [--pythonpath DIR]
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

EXPERIMENTS = ("stage2_bfcl", "stage1_bfcl", "quickstart", "retool", "tau2_pipeline")
MODELS = ("qwen3_4b", "qwen3_8b", "glm4_9b", "llama3_1_8b_instruct")

# Runs in the child (T3RL_CACHE_DIR set to an empty directory).
CHILD = r"""
import os, sys
from launch.config import compose_cache
from launch.config.resolved import composed_plain

lines = [[f"+experiment={e}", f"model={m}"] for e in sys.argv[1].split(",") for m in sys.argv[2].split(",")]
os.environ["T3RL_NO_CACHE"] = "1"
plains = [composed_plain(line) for line in lines]
del os.environ["T3RL_NO_CACHE"]
os.getppid()
for line, plain in zip(lines, plains):
    compose_cache.cached_compose(line, (), lambda reads, plain=plain: plain)
os.getppid()
for line, plain in zip(lines, plains):
    compose_cache._holds_secret(plain, line)
os.getppid()
stored = len(os.listdir(os.path.join(os.environ["T3RL_CACHE_DIR"], "compose")))
assert stored == len(lines), f"{stored} of {len(lines)} command lines stored"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pythonpath", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"PYTHONPYCACHEPREFIX": f"{scratch}/pyc", "PYTHONPATH": args.pythonpath or os.getcwd()}
        dumps = f"{scratch}/callgrind.out"
        child = [sys.executable, "-c", CHILD, ",".join(EXPERIMENTS), ",".join(MODELS)]
        valgrind = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-before=os_getppid"]
        valgrind.append(f"--callgrind-out-file={dumps}")
        # The first run writes the bytecode cache; each gets an empty cache directory (every line a miss).
        for run, command in enumerate((child, [*valgrind, *child])):
            env["T3RL_CACHE_DIR"] = f"{scratch}/cache{run}"
            done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(done.stderr)
        parts = sorted(glob.glob(dumps + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        counts = [int(re.search(r"^(?:summary|totals): (\d+)", Path(p).read_text(), re.M)[1]) for p in parts]
    lines = len(EXPERIMENTS) * len(MODELS)
    # Dumps: up to the first marker, the lookups and stores, the scans alone again, after the last.
    print(f"{counts[1] / 1e6:9.1f} M  lookup, secret scan and store of {lines} new command lines")
    print(f"{counts[1] / lines / 1e6:9.2f} M  per command line")
    print(f"{counts[2] / lines / 1e6:9.2f} M  per command line in its secret scan alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
