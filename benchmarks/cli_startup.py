"""Start-up of `t3rl plan +experiment=stage2_bfcl` against a bare `python -c "import hydra"`.

Fresh processes, alternating, several times, in one scratch directory (each plan writes a new run
dir under it); the medians and the ratios to `import hydra` are printed:
  - cold: `T3RL_NO_CACHE=1`, so Hydra is imported and composes the config, as on a first invocation;
    as users run it, so with a second CPU a forked child composes while the command imports the schema
    (launch/config/compose_ahead.py);
  - cold, in one process (`T3RL_COMPOSE_AHEAD=0` too): for reference, no target;
  - warm: the composition cache filled by an earlier identical command line (launch/config/compose_cache.py),
    so Hydra is not imported; validation and planning run in full as always.
Targets: ratio <= 2 (plan), <= 1.8 (validate) and plan < 1 s. Each row also shows its median CPU time
(user + system, the composing child's included): overlapping on two cores shortens the wait, not the work.

Every process gets the same bytecode cache (PYTHONPYCACHEPREFIX in the scratch dir, filled by one
discarded run of each command), as an installed package has; otherwise a PYTHONDONTWRITEBYTECODE
environment would recompile t3rl's sources on every start while Hydra's come precompiled.

    python benchmarks/cli_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T3RL = Path(sys.executable).with_name("t3rl")
PLAN = [str(T3RL), "plan", "+experiment=stage2_bfcl"]
VALIDATE = [str(T3RL), "validate", "+experiment=stage2_bfcl"]
BARE = [sys.executable, "-c", "import hydra, omegaconf"]
BARE_LABEL = "python -c 'import hydra, omegaconf'"
# label → (ratio target to the bare import, seconds target)
TARGETS = {
    "t3rl plan, cold (T3RL_NO_CACHE=1)": (2.0, None),
    "t3rl validate, cold (T3RL_NO_CACHE=1)": (1.8, None),
    "t3rl plan, warm composition cache": (None, 1.0),
}


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and of every descendant it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        base = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
        cold = {**base, "T3RL_NO_CACHE": "1"}
        commands = {
            BARE_LABEL: (BARE, base),
            "t3rl plan, cold (T3RL_NO_CACHE=1)": (PLAN, cold),
            "t3rl validate, cold (T3RL_NO_CACHE=1)": (VALIDATE, cold),
            "t3rl plan, cold, in one process": (PLAN, {**cold, "T3RL_COMPOSE_AHEAD": "0"}),
            "t3rl validate, cold, in one process": (VALIDATE, {**cold, "T3RL_COMPOSE_AHEAD": "0"}),
            "t3rl plan, warm composition cache": (PLAN, {**base, "T3RL_CACHE_DIR": str(cwd / "cache")}),
        }
        for argv, env in commands.values():  # discarded: writes bytecode, fills the composition cache
            timed(argv, cwd, env)
        runs: dict[str, list[float]] = {label: [] for label in commands}
        cpu: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, (argv, env) in commands.items():
                wall, used = timed(argv, cwd, env)
                runs[label].append(wall)
                cpu[label].append(used)
    medians = {label: statistics.median(times) for label, times in runs.items()}
    for label, times in runs.items():
        print(
            f"{label:38} median {medians[label]:.3f} s (min {min(times):.3f}, max {max(times):.3f}),"
            f" CPU {statistics.median(cpu[label]):.3f} s"
        )
    bare = medians[BARE_LABEL]
    for label in ("t3rl plan, cold, in one process", "t3rl validate, cold, in one process"):
        print(f"{label}: {medians[label] / bare:.2f}x the bare import (for reference)")
    met, ratios = True, []
    for label, (ratio_target, seconds_target) in TARGETS.items():
        ratio = medians[label] / bare
        ok = (ratio_target is None or ratio <= ratio_target) and (
            seconds_target is None or medians[label] < seconds_target
        )
        met &= ok
        wanted = f"<= {ratio_target:g}x" if ratio_target is not None else f"< {seconds_target:g} s"
        print(f"{label}: {ratio:.2f}x the bare import (target {wanted}: {'met' if ok else 'NOT met'})")
        ratios.append(f"{label.split(' (')[0].replace('t3rl ', '')} {ratio:.2f}")
    print("ratio to `import hydra, omegaconf`: " + ", ".join(ratios))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
