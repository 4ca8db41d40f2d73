"""Local sandbox throughput: `print(1)` cells per second against bare `python -c "print(1)"` processes
at the same concurrency (issue 13: >= 70 cells/s at concurrency 2-4 and >= 1.0 x bare).

Bare: N threads, each running `subprocess.run([sys.executable, "-c", "print(1)"])` in a loop — a fresh
interpreter with none of the sandbox's work. Sandbox: N cells in flight through `LocalSandbox.run`,
with every protection this host offers (printed first). Rounds alternate bare and sandbox so machine
load hits both alike; medians with min-max; the ratio lines come last. Exits 1 when a target is missed.

    .venv/bin/python benchmarks/sandbox_throughput.py [--cells 60] [--rounds 5] [--concurrency 2 4]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import threading
import time

from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox

CELL = "print(1)"
TARGET_CELLS_PER_S = 70.0
TARGET_RATIO = 1.0


def bare(cells: int, concurrency: int) -> float:
    left = [cells]
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            done = subprocess.run([sys.executable, "-c", CELL], capture_output=True, check=True)
            assert done.stdout == b"1\n"

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return cells / (time.perf_counter() - start)


async def sandboxed(sandbox: LocalSandbox, cells: int, concurrency: int) -> float:
    slots = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with slots:
            result = await sandbox.run(CELL)
            assert result.status == "success" and result.stdout == "1\n", result

    start = time.perf_counter()
    await asyncio.gather(*[one() for _ in range(cells)])
    return cells / (time.perf_counter() - start)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f} ({min(values):.1f}-{max(values):.1f})"


async def main(cells: int, rounds: int, levels: list[int]) -> int:
    started = time.perf_counter()
    sandbox = LocalSandbox(LocalSandboxConfig(max_concurrency=max(levels)))
    print(f"sandbox start-up {time.perf_counter() - started:.2f} s")
    protections = getattr(sandbox, "protections", None)  # absent before issue 10 (for before/after runs)
    print(protections.line() if protections else f"isolation: {getattr(sandbox, 'isolation', '?')}")
    await sandboxed(sandbox, 4, 1)  # warm-up
    ratios = []
    for level in levels:
        base, box = [], []
        for _ in range(rounds):
            base.append(bare(cells, level))
            box.append(await sandboxed(sandbox, cells, level))
        print(f"concurrency {level}: bare python -c {spread(base)} | local sandbox {spread(box)} cells/s")
        ratios.append((level, statistics.median(box), statistics.median(box) / statistics.median(base)))
    await sandbox.aclose()
    missed = False
    for level, cells_per_s, ratio in ratios:
        ok = cells_per_s >= TARGET_CELLS_PER_S and ratio >= TARGET_RATIO
        missed |= not ok
        print(
            f"concurrency {level}: sandbox {cells_per_s:.1f} cells/s (target >= {TARGET_CELLS_PER_S:g}), "
            f"ratio sandbox/bare {ratio:.2f} (target >= {TARGET_RATIO:g}) {'ok' if ok else 'MISSED'}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=60, help="cells per round and side")
    parser.add_argument("--rounds", type=int, default=5, help="alternating bare/sandbox rounds per level")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.cells, args.rounds, args.concurrency)))
