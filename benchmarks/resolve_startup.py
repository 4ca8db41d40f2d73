"""Cold start of the config layer alone: a fresh process that resolves +experiment=stage2_bfcl, against
a bare `python -c "import hydra"`, alternating, several times; prints the medians, their ratio, and
whether the resolving process imported any heavy library (torch, transformers, ray, sglang, wandb,
bfcl_eval). The composition cache is off (T3RL_NO_CACHE=1), so every process composes with Hydra.
`t3rl plan` adds the CLI and the plan on top, cold and with the cache (benchmarks/cli_startup.py).

    python benchmarks/resolve_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HEAVY = ("torch", "transformers", "ray", "sglang", "wandb", "bfcl_eval")
RESOLVE = (
    "import sys\n"
    "from launch.checks.resolve import resolve\n"
    "resolve(['+experiment=stage2_bfcl'])\n"
    f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]\n"
    "print(','.join(sorted(heavy)))\n"
)


ENV = {**os.environ, "T3RL_NO_CACHE": "1"}


def timed(code: str) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=ENV)
    return time.perf_counter() - start, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    timed(RESOLVE)  # fill the OS file cache once
    timed("import hydra")
    resolves, hydras, heavy = [], [], ""
    for _ in range(args.repeats):
        seconds, heavy = timed(RESOLVE)
        resolves.append(seconds)
        hydras.append(timed("import hydra")[0])
    r, h = statistics.median(resolves), statistics.median(hydras)
    for label, median, runs in (
        ("resolve(+experiment=stage2_bfcl)", r, resolves),
        ("import hydra", h, hydras),
    ):
        print(f"{label:34} median {median:.3f} s   (runs: {' '.join(f'{x:.2f}' for x in runs)})")
    print(f"ratio resolve / import hydra: {r / h:.2f}")
    print(f"heavy modules imported while resolving: {heavy or 'none'}")


if __name__ == "__main__":
    main()
