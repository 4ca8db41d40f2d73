"""Instructions a cold `t3rl plan|validate +experiment=stage2_bfcl` executes, step by step (callgrind).

Instruction counts do not move with the machine's load, so they compare two trees where CPU times on a
shared machine cannot. The command runs once in a fresh process under `valgrind --tool=callgrind
--dump-before=os_getppid` (T3RL_NO_CACHE=1, T3RL_COMPOSE_AHEAD=0, a warm bytecode cache); `os.getppid()`
is called between its imports and before and after each step (composition, the run config's validation,
each pre-flight rule, the trial plan, the plan dir's record), so each dump counts one step; the markers'
own cost is counted too. `--pythonpath DIR` runs another tree (a snapshot with a change applied or
reverted). A diagnostic, not a target: cli_startup.py holds the target.

    .venv/bin/python benchmarks/cli_instructions.py [plan|validate] [--pythonpath DIR]
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

# Runs in the child; writes the step names in order to the file named by its first argument.
CHILD = r"""
import functools, importlib, os, sys
marks = []

def mark(name):
    marks.append(name)
    os.getppid()

def wrap(module, attr, name):
    owner = importlib.import_module(module)
    original = getattr(owner, attr)

    @functools.wraps(original)
    def step(*args, **kwargs):
        mark("before " + name)
        try:
            return original(*args, **kwargs)
        finally:
            mark("after " + name)

    setattr(owner, attr, step)

out, command = sys.argv[1], sys.argv[2]
import launch.cli
mark("import launch.cli")
from launch.config.secrets import scrub_standard_streams
scrub_standard_streams()
mark("the streams scrubbed (rich's console hooked when imported)")
import launch.config.schema
mark("import launch.config.schema")
import launch.checks.resolve
mark("import the checks and the plan builders")
importlib.import_module("launch.cli.run_command" if command == "plan" else "launch.cli.validate_command")
mark("import the command")
import launch.checks.validate as checks
for module, attr in (
    ("launch.checks.resolve", "composed_plain"),
    ("launch.checks.resolve", "remember_revealed"),
    ("launch.checks.validate", "trial_plan"),
    ("launch.run.single", "plan_run"),
    ("launch.run.single", "write_run_dir"),
    ("launch.run.pipeline", "decide"),
):
    if command == "plan" or not module.startswith("launch.run"):
        wrap(module, attr, attr)

def ruled(rule):
    name = rule.__module__.rsplit(".", 1)[-1] + "." + rule.__name__
    def step(ctx):
        mark("before " + name)
        found = list(rule(ctx))
        mark("after " + name)
        return found
    return step

checks.RULES = tuple(ruled(rule) for rule in checks.RULES)
sys.argv = ["t3rl", command, "+experiment=stage2_bfcl"]
try:
    launch.cli.main()
except SystemExit:
    pass
finally:
    mark("exit")
    with open(out, "w") as f:
        f.write("\n".join(marks))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="validate", choices=("plan", "validate"))
    parser.add_argument("--pythonpath", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0", "PYTHONPYCACHEPREFIX": f"{scratch}/pyc"}
        if args.pythonpath:
            env["PYTHONPATH"] = args.pythonpath
        marks, dumps = f"{scratch}/marks", f"{scratch}/callgrind.out"
        child = [sys.executable, "-c", CHILD, marks, args.command]
        quiet = {"cwd": scratch, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run(child, check=False, **quiet)  # writes the bytecode cache
        valgrind = ["valgrind", "--tool=callgrind", "--dump-instr=no", "--dump-line=no"]
        valgrind += ["--dump-before=os_getppid", f"--callgrind-out-file={dumps}"]
        subprocess.run([*valgrind, *child], check=False, **quiet)
        names = Path(marks).read_text().split("\n")
        parts = sorted(glob.glob(dumps + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
        counts = [int(re.search(r"^(?:summary|totals): (\d+)", Path(p).read_text(), re.M)[1]) for p in parts]
    for name, count in zip(names, counts, strict=False):
        if count >= 500_000:  # steps below 0.5 M instructions are left out
            print(f"{count / 1e6:9.1f} M  up to: {name}")
    print(f"{sum(counts) / 1e6:9.1f} M  in all (the markers' own cost included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
