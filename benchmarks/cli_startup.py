"""Start-up of `t3rl plan|validate +experiment=stage2_bfcl` against `python -c "import hydra, omegaconf"`.

Fresh processes, alternating (one round runs every command once, so a busy neighbour slows all of them
alike), several rounds, in one scratch directory (each plan writes a new plan dir under it); medians are
printed with their ratios to the bare import:
  - cold, in one process (`T3RL_NO_CACHE=1 T3RL_COMPOSE_AHEAD=0`): nothing cached, nothing forked, as on
    a first invocation on one CPU. Target (issue 26): <= 1.5x the bare import, for plan and for validate,
    on CPU time (user + system; in one process the wall time on an idle machine, and what a loaded
    machine cannot inflate);
  - cold (`T3RL_NO_CACHE=1`): as users run it, so with a second CPU a forked child composes while the
    command imports the schema (launch/config/compose_ahead.py): an addition, not how the target above
    is met. Targets: wall <= 2x (plan) and <= 1.8x (validate);
  - warm: the composition cache filled by an earlier identical command line (compose_cache.py); validation
    and planning run in full as always. Target: plan < 1 s wall.
Each round runs every command twice, idle and with one core kept busy by a spinning child
(benchmarks/busy_core.py, paused between), and every target is checked in both conditions except the
forked path's wall times (with the second core taken there is nothing to compose ahead on: reported).
Exit code 1 when a target is missed. More rows are printed for reference, no target:
  - the libraries a cold plan cannot do without, alone (PyYAML, pydantic with one model's validator
    built): the share of the 1.5x budget they take before any of t3rl's own modules or work. pydantic
    as it comes: its plugin loader imports importlib.metadata and scans for plugins, which a cold plan
    avoids (launch.config.pydantic_plugins): the row counts ~0.15x of the bare import more than t3rl
    pays for them (callgrind: 708 M instructions, 590 M with the switch set and the loader imported as
    t3rl does);
  - plan and validate cold in one process with their output on a terminal (a pseudo-terminal, 80
    columns, read as they print): what a user at a terminal pays, rich's console and table included.
    Every other row sends the output to /dev/null, as a pipe, a file or CI's log, where t3rl prints
    the same text without rich (launch.output), so those rows do not include rich.

Every process gets the same bytecode cache (PYTHONPYCACHEPREFIX in the scratch dir, filled by one
discarded run of each command), as an installed package has; otherwise a PYTHONDONTWRITEBYTECODE
environment would recompile t3rl's sources on every start while Hydra's come precompiled.

    python benchmarks/cli_startup.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

from busy_core import Neighbour, label

T3RL = Path(sys.executable).with_name("t3rl")
PLAN = [str(T3RL), "plan", "+experiment=stage2_bfcl"]
VALIDATE = [str(T3RL), "validate", "+experiment=stage2_bfcl"]
BARE = [sys.executable, "-c", "import hydra, omegaconf"]
BARE_LABEL = "python -c 'import hydra, omegaconf'"
LIBRARIES = [
    sys.executable,
    "-c",
    "import yaml\nfrom pydantic import BaseModel\nclass A(BaseModel):\n    x: int\nA(x=1)",
]
LIBRARIES_LABEL = "the libraries alone (yaml, pydantic)"
ONE_PROCESS = ("t3rl plan, cold, in one process", "t3rl validate, cold, in one process")
IN_A_TERMINAL = (
    "t3rl plan, cold, one process, on a terminal",
    "t3rl validate, cold, one process, on a terminal",
)
# label → (CPU ratio target, wall ratio target, wall seconds target) against the bare import
TARGETS = {
    "t3rl plan, cold, in one process": (1.5, None, None),
    "t3rl validate, cold, in one process": (1.5, None, None),
    "t3rl plan, cold (T3RL_NO_CACHE=1)": (None, 2.0, None),
    "t3rl validate, cold (T3RL_NO_CACHE=1)": (None, 1.8, None),
    "t3rl plan, warm composition cache": (None, None, 1.0),
}
FORKED = list(TARGETS)[2:4]
CONDITIONS = (False, True)  # idle, one core busy


def timed(argv: list[str], cwd: Path, env: dict[str, str], terminal: bool = False) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and of every descendant it waited for); its stdout and
    stderr to /dev/null, or with `terminal` to a pseudo-terminal of 80 columns read meanwhile."""
    leader, follower = pty.openpty() if terminal else (-1, subprocess.DEVNULL)
    if terminal:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        reader = threading.Thread(target=_drain, args=(leader,), daemon=True)
        reader.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=follower, stderr=follower)
    finally:
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if terminal:
            os.close(follower)
            reader.join()
            os.close(leader)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _drain(leader: int) -> None:
    """Read a pseudo-terminal until its other end is closed (it holds a few KiB; a plan prints more)."""
    try:
        while os.read(leader, 65536):
            pass
    except OSError:  # EIO once the child's end is closed
        pass


def measure(repeats: int) -> dict[bool, tuple[dict[str, list[float]], dict[str, list[float]]]]:
    """Wall and CPU seconds of every command, idle and with one core busy, `repeats` alternating rounds."""
    with tempfile.TemporaryDirectory() as scratch, Neighbour() as neighbour:
        cwd = Path(scratch)
        base = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = str(cwd / "pycache")
        cold = {**base, "T3RL_NO_CACHE": "1"}
        alone = {**cold, "T3RL_COMPOSE_AHEAD": "0"}
        commands = {
            BARE_LABEL: (BARE, base, False),
            LIBRARIES_LABEL: (LIBRARIES, base, False),
            ONE_PROCESS[0]: (PLAN, alone, False),
            ONE_PROCESS[1]: (VALIDATE, alone, False),
            IN_A_TERMINAL[0]: (PLAN, alone, True),
            IN_A_TERMINAL[1]: (VALIDATE, alone, True),
            "t3rl plan, cold (T3RL_NO_CACHE=1)": (PLAN, cold, False),
            "t3rl validate, cold (T3RL_NO_CACHE=1)": (VALIDATE, cold, False),
            "t3rl plan, warm composition cache": (
                PLAN,
                {**base, "T3RL_CACHE_DIR": str(cwd / "cache")},
                False,
            ),
        }
        # Discarded: writes bytecode, fills the cache (which stores a line the second time it composes it).
        for _ in range(2):
            for argv, env, terminal in commands.values():
                timed(argv, cwd, env, terminal)
        found = {
            busy: ({label: [] for label in commands}, {label: [] for label in commands})
            for busy in CONDITIONS
        }
        for _ in range(repeats):
            for busy in CONDITIONS:
                neighbour.busy(busy)
                walls, cpus = found[busy]
                for label_, (argv, env, terminal) in commands.items():
                    wall, cpu = timed(argv, cwd, env, terminal)
                    walls[label_].append(wall)
                    cpus[label_].append(cpu)
            neighbour.busy(False)
    return found


def report(walls: dict[str, list[float]], cpus: dict[str, list[float]], busy: bool) -> tuple[bool, str]:
    """Print one condition's medians and verdicts; (every target met, its summary)."""
    wall = {label_: statistics.median(times) for label_, times in walls.items()}
    cpu = {label_: statistics.median(times) for label_, times in cpus.items()}
    print(f"-- {label(busy)}")
    for label_ in walls:
        print(
            f"{label_:40} wall median {wall[label_]:.3f} s (min {min(walls[label_]):.3f}),"
            f" CPU median {cpu[label_]:.3f} s (min {min(cpus[label_]):.3f})"
        )
    met = True
    for label_, (cpu_target, wall_target, seconds_target) in TARGETS.items():
        cpu_ratio, wall_ratio = cpu[label_] / cpu[BARE_LABEL], wall[label_] / wall[BARE_LABEL]
        checks = []
        if cpu_target is not None:
            checks.append((cpu_ratio <= cpu_target, f"CPU {cpu_ratio:.2f}x (target <= {cpu_target:g}x)"))
        if wall_target is not None and busy:
            checks.append((True, f"wall {wall_ratio:.2f}x (reported: no second core to compose ahead on)"))
        elif wall_target is not None:
            checks.append((wall_ratio <= wall_target, f"wall {wall_ratio:.2f}x (target <= {wall_target:g}x)"))
        if seconds_target is not None:
            ok = wall[label_] < seconds_target
            checks.append((ok, f"wall {wall[label_]:.3f} s (target < {seconds_target:g} s)"))
        ok = all(passed for passed, _ in checks)
        met &= ok
        words = "; ".join(text for _, text in checks)
        print(f"{label_}: {words}: {'met' if ok else 'NOT met'}")
    one, tty, forked = ratios(ONE_PROCESS, cpu), ratios(IN_A_TERMINAL, cpu), ratios(FORKED, wall)
    warm = wall["t3rl plan, warm composition cache"]
    floor = cpu[LIBRARIES_LABEL] / cpu[BARE_LABEL]
    summary = (
        f"{label(busy)}: in one process (CPU) {one}; on a terminal, reported (CPU) {tty}; forked (wall)"
        f" {forked}; warm plan {warm:.2f} s; the libraries alone (CPU) {floor:.2f}"
    )
    return met, summary


def ratios(labels: tuple[str, ...] | list[str], medians: dict[str, float]) -> str:
    """`plan 1.52, validate 1.31`: each command's median against the bare import's."""
    return ", ".join(f"{c.split()[1].rstrip(',')} {medians[c] / medians[BARE_LABEL]:.2f}" for c in labels)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    found = measure(args.repeats)
    results = [report(*found[busy], busy) for busy in CONDITIONS]
    print(f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("ratio to `import hydra, omegaconf`: " + "; ".join(summary for _, summary in results))
    return 0 if all(met for met, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
