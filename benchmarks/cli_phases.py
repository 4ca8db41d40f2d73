"""Where a cold `t3rl plan|validate +experiment=stage2_bfcl` spends its CPU, phase by phase.

Each run is a fresh process (T3RL_NO_CACHE=1 and T3RL_COMPOSE_AHEAD=0, so composition runs in that
process and is timed with the rest; one bytecode cache for all, as cli_startup.py does) that imports the
libraries and t3rl's modules one group at a time, in the order the command needs them, then runs the
command with its main steps timed; a phase's figure is the least CPU time it took over the runs (the
least disturbed by other work on the machine). Imports are charged to the first group that needs them.
The yardstick, `import hydra, omegaconf`, is timed the same way in processes of its own. A diagnostic,
not a target: cli_startup.py holds the targets (whole processes, interpreter start-up and exit included).

    .venv/bin/python benchmarks/cli_phases.py [plan|validate] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

YARDSTICK = "import hydra, omegaconf (the yardstick, in its own process)"
# Runs in the child: prints {phase: cpu seconds} as JSON on its last line.
CHILD = r"""
import contextlib, importlib, io, json, sys, time
phases, last = {}, time.process_time()

def mark(label):
    global last
    now = time.process_time()
    phases[label] = phases.get(label, 0.0) + now - last
    last = now

for label, modules in [
    ("import yaml, rich.console", ["yaml", "rich.console"]),
    ("import composition (launch.config.resolved, direct)", ["launch.config.resolved"]),
    ("import pydantic", ["pydantic", "pydantic.main"]),
    ("import the schema (t3rl_core.config, launch.config.schema)", ["launch.config.schema"]),
    ("import checks, plan and run modules", [
        "launch.checks.resolve", "launch.checks.rules", "launch.plan.build", "launch.run.single",
        "launch.cli.run_command", "launch.cli.validate_command"]),
]:
    for name in modules:
        importlib.import_module(name)
    mark(label)

import launch.checks.resolve as resolve_module
import launch.checks.validate as validate_module
import launch.config.schema as schema_module
import launch.config.resolved as resolved_module
import launch.run.single as single

steps = {}

def timed(owner, name, label):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            steps[label] = steps.get(label, 0.0) + time.process_time() - start
    setattr(owner, name, wrapper)

STEP_ORDER = []
for owner, name, label in [
    (resolved_module, "plain_composition", "  compose (direct, provenance)"),
    (schema_module.RunConfig, "model_validate", "  the schema: build its validators, validate"),
    (resolve_module, "validate", "  cross-field rules and the trial plan"),
    (validate_module, "trial_plan", "    of which the trial plan"),
    (single, "plan_run", "  build the plan"),
    (single, "execute", "  write the plan dir and print it"),
]:
    timed(owner, name, label)
    STEP_ORDER.append(label)
sys.argv = ["t3rl", COMMAND, "+experiment=stage2_bfcl"]
from launch.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main()
    except SystemExit:
        pass
mark("run the command")
for label in STEP_ORDER:
    if label in steps:
        phases[label] = steps[label]
phases["total (after interpreter start-up)"] = sum(v for k, v in phases.items() if not k.startswith(" "))
print(json.dumps(phases))
"""
BARE = r"""
import json, time
start = time.process_time()
import hydra, omegaconf
print(json.dumps({"yardstick": time.process_time() - start}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="plan", choices=("plan", "validate"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env |= {"T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
        code = CHILD.replace("COMMAND", repr(args.command))
        runs, bare = [], []
        for run in range(args.runs + 1):  # the first writes the bytecode cache and is discarded
            for script, into in ((code, runs), (BARE, bare)):
                done = subprocess.run(
                    [sys.executable, "-c", script], cwd=scratch, env=env, capture_output=True, text=True
                )
                if done.returncode != 0:
                    raise SystemExit(done.stderr)
                if run:
                    into.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for phase in runs[0]:
        print(f"{phase:64} {1000 * min(r[phase] for r in runs):7.1f} ms CPU (least of {args.runs})")
    print(f"{YARDSTICK:64} {1000 * min(b['yardstick'] for b in bare):7.1f} ms CPU (least of {args.runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
