"""CPU per `resolve()` in a warm process: valid command lines against refused ones (a key the composed config
lacks, a misspelt key or group, `+` of a key it has, `~` of one it lacks), the mistakes people type most.

A refused line should cost no more than a valid one: its problem is found before validation. Each line
resolves once per round with another `seed=N` (the composition cache, on in a temporary dir as in the
suite, never hits: the lines each test resolves are mostly its own), after one warm-up round. Each tree
(this checkout, and `--against DIR` another one, e.g. `git worktree add --detach /tmp/base HEAD~3`) runs
in its own processes, alternating, `--repeats` times; per tree: CPU (`time.process_time`, not wall: other
work on the machine inflates wall) per valid and per refused resolve, the mean over lines of each line's
median, the median over processes. Exits 1 when this tree's refused lines cost more than 1.5 times its
valid ones.

    .venv/bin/python benchmarks/resolve_throughput.py [--against DIR] [--repeats 3] [--rounds 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 1.5
VALID = (
    ["+experiment=stage1_bfcl"],
    ["+experiment=stage1_bfcl", "reward=binary"],
    ["+experiment=stage2_bfcl"],
    ["+experiment=stage1_bfcl", "model=qwen3_8b"],
    ["+experiment=tau2_pipeline", "hardware.sglang_mem_fraction=0.5"],
)
REFUSED = (
    ["+experiment=stage1_bfcl", "env.max_steps=5"],  # a schema field the files leave at its default
    ["+experiment=stage1_bfcl", "hardware.num_nodes=2"],  # another framework's name
    ["+experiment=stage1_bfcl", "hardware.micro_batch_size=2"],
    ["+experiment=stage2_bfcl", "modle=qwen3_8b"],  # a group misspelt
    ["+experiment=stage1_bfcl", "stages.train.curriculum.optimizer.lrr=1e-5"],  # deep, misspelt
    ["+experiment=tau2_pipeline", "+hardware.nodes=2"],  # '+' of a key the config has
    ["+experiment=stage1_bfcl", "~hardware.nosuch"],  # nothing to delete
)


def worker(rounds: int) -> None:
    """Resolve every line `rounds` times in this process; print each line's median CPU (ms) as JSON."""
    os.chdir(tempfile.mkdtemp())
    from launch.checks.resolve import resolve
    from launch.config.errors import ConfigError

    def cpu(line: list[str], seed: int, refused: bool) -> float:
        start = time.process_time()
        try:
            resolve([*line, f"seed={seed}"])
        except ConfigError:
            if not refused:
                raise
        else:
            if refused:
                raise SystemExit(f"not refused: {line}")
        return (time.process_time() - start) * 1000

    groups = {"valid": VALID, "refused": REFUSED}
    times: dict[str, list[list[float]]] = {name: [[] for _ in lines] for name, lines in groups.items()}
    for round_ in range(rounds + 1):
        for name, lines in groups.items():
            for index, line in enumerate(lines):
                spent = cpu(list(line), 1000 + round_, name == "refused")
                if round_:  # the first round imports and warms what every later one reuses
                    times[name][index].append(spent)
    print(json.dumps({name: [statistics.median(t) for t in per_line] for name, per_line in times.items()}))


def run(tree: Path, rounds: int, cache: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "T3RL_CACHE_DIR": cache, "T3RL_COMPOSE_AHEAD": "0"}
    env.pop("T3RL_NO_CACHE", None)
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--rounds", str(rounds)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    medians = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: statistics.fmean(values) for name, values in medians.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout to compare with, run alternately")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.rounds)
        return 0
    trees = {"this tree": ROOT, **({f"{args.against}": args.against.resolve()} if args.against else {})}
    results: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(args.repeats):
            for label, tree in trees.items():
                results[label].append(run(tree, args.rounds, cache))
    ratios = {}
    for label, runs in results.items():
        valid = statistics.median(r["valid"] for r in runs)
        refused = statistics.median(r["refused"] for r in runs)
        ratios[label] = refused / valid
        each = {name: " ".join(f"{r[name]:.1f}" for r in runs) for name in ("valid", "refused")}
        print(
            f"{label:28} valid {valid:6.1f} ms  refused {refused:6.1f} ms  ratio {refused / valid:.2f}"
            f"   (runs: valid {each['valid']}; refused {each['refused']})"
        )
    met = ratios["this tree"] <= LIMIT
    verdict = "met" if met else "MISSED"
    print(f"refused/valid {ratios['this tree']:.2f} {'<=' if met else '>'} {LIMIT}: {verdict}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
