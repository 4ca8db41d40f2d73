"""Start-up of `t3rl plan +experiment=stage2_bfcl` against a bare `python -c "import hydra"`.

Three fresh processes, alternating, several times, in one scratch directory (each plan writes a new run
dir under it); the medians and both ratios to `import hydra` are printed:
  - cold: `T3RL_NO_CACHE=1`, so Hydra is imported and composes the config, as on a first invocation;
  - warm: the composition cache filled by an earlier identical command line (launch/config/compose_cache.py),
    so Hydra is not imported; validation and planning run in full as always.
Targets: ratio <= 2 and plan < 1 s.

Every process gets the same bytecode cache (PYTHONPYCACHEPREFIX in the scratch dir, filled by one
discarded run of each command), as an installed package has; otherwise a PYTHONDONTWRITEBYTECODE
environment would recompile t3rl's sources on every start while Hydra's come precompiled.

    python benchmarks/cli_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

T3RL = Path(sys.executable).with_name("t3rl")
PLAN = [str(T3RL), "plan", "+experiment=stage2_bfcl"]
HYDRA = [sys.executable, "-c", "import hydra"]
TARGET_RATIO, TARGET_SECONDS = 2.0, 1.0


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        base = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
        commands = {
            "python -c 'import hydra'": (HYDRA, base),
            "t3rl plan, cold (T3RL_NO_CACHE=1)": (PLAN, {**base, "T3RL_NO_CACHE": "1"}),
            "t3rl plan, warm composition cache": (PLAN, {**base, "T3RL_CACHE_DIR": str(cwd / "cache")}),
        }
        for argv, env in commands.values():  # discarded: writes bytecode, fills the composition cache
            timed(argv, cwd, env)
        runs: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, (argv, env) in commands.items():
                runs[label].append(timed(argv, cwd, env))
    medians = {label: statistics.median(times) for label, times in runs.items()}
    for label, times in runs.items():
        print(f"{label:36} median {medians[label]:.3f} s   (runs: {' '.join(f'{x:.2f}' for x in times)})")
    hydra = medians["python -c 'import hydra'"]
    for label in list(commands)[1:]:
        ratio = medians[label] / hydra
        meets = ratio <= TARGET_RATIO and medians[label] < TARGET_SECONDS
        print(
            f"ratio {label} / import hydra: {ratio:.2f}  "
            f"(target ratio <= {TARGET_RATIO:g} and < {TARGET_SECONDS:g} s: {'met' if meets else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
