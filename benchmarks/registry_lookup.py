"""What a registry name costs in a fresh process: a built-in name (no scan of the installed
distributions), a plugin by import path (imports its module), and a plugin by entry-point name (scans
the `t3rl.rewards` group of every installed distribution once), alternating, several times; prints the
medians and each against the built-in lookup. Each process imports t3rl_core.registries and the reward
base modules, then times validating one reward section (the entry's module import included); the
import path and entry point name the example plugin (examples/plugin).

    python benchmarks/registry_lookup.py [--repeats 7]
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

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "plugin"
CODE = (
    "import time\n"
    "from t3rl_core.registries import REWARDS\n"
    "import t3rl_core.config, t3rl_core.rewards.base\n"  # shared by every case: not what is measured
    "start = time.perf_counter()\n"
    "REWARDS.validate({{'name': {name!r}}})\n"
    "print(time.perf_counter() - start)\n"
)
CASES = {
    "built-in (binary)": "binary",
    "import path": "t3rl_counter.reward:ExactTarget",
    "entry point": "exact_target",
}


def installed(root: Path) -> None:
    """The example's distribution metadata as pip writes it, so its entry points are found."""
    info = root / "t3rl_counter-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: t3rl-counter\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[t3rl.rewards]\nexact_target = t3rl_counter.reward:ExactTarget\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        installed(Path(scratch))
        path = os.pathsep.join([scratch, str(EXAMPLE), str(REPO)])
        env = {**os.environ, "PYTHONPATH": path}
        times: dict[str, list[float]] = {case: [] for case in CASES}
        for _ in range(args.repeats):
            for case, name in CASES.items():
                done = subprocess.run(
                    [sys.executable, "-c", CODE.format(name=name)],
                    check=True,
                    capture_output=True,
                    text=True,
                    env=env,
                )
                times[case].append(float(done.stdout.strip()))
    base = statistics.median(times["built-in (binary)"])
    for case, values in times.items():
        median = statistics.median(values)
        print(f"{case:<20} {median * 1000:7.1f} ms  ({median / base:.2f}x the built-in lookup)")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.1f} s)")
