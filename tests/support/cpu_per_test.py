"""Each test's CPU and wall, per xdist worker: the figures of docs/explanation/performance.md's "The test
suite" (where the CPU goes, when each worker ended).

`T3RL_TEST_CPU_DIR=DIR ./scripts/test.sh -p tests.support.cpu_per_test` writes one JSON line per test
(`id`, `worker`, `start`, `end`, `cpu`: this process's and its reaped children's user + sys seconds over
the test's setup, call and teardown) to DIR/<worker>.jsonl; `python -m tests.support.cpu_per_test DIR`
prints each worker's end and the modules that took the most CPU.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

DIR = "T3RL_TEST_CPU_DIR"
_LOG: list[TextIO] = []


def cpu_seconds() -> float:
    """User + sys of this process and of its children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if DIR not in os.environ:
        return (yield)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if not _LOG:
        _LOG.append((Path(os.environ[DIR]) / f"{worker}.jsonl").open("a"))
    start, cpu = time.time(), cpu_seconds()
    try:
        return (yield)
    finally:
        line = {"id": item.nodeid, "worker": worker, "start": start, "end": time.time()}
        _LOG[0].write(json.dumps({**line, "cpu": cpu_seconds() - cpu}) + "\n")
        _LOG[0].flush()


def summary(directory: Path, top: int = 30) -> str:
    """Each worker's tests, CPU and end (seconds after the first test started); the top modules by CPU."""
    tests = [json.loads(line) for file in sorted(directory.glob("*.jsonl")) for line in file.open()]
    first = min(t["start"] for t in tests)
    lines = []
    for worker in sorted({t["worker"] for t in tests}):
        own = [t for t in tests if t["worker"] == worker]
        cpu, end = sum(t["cpu"] for t in own), max(t["end"] for t in own) - first
        lines.append(f"{worker}: {len(own)} tests, {cpu:.0f} s CPU, last ended at {end:.0f} s")
    modules: dict[str, dict[str, Any]] = defaultdict(lambda: {"cpu": 0.0, "wall": 0.0, "tests": 0})
    for t in tests:
        module = modules[t["id"].split("::")[0]]
        module["cpu"] += t["cpu"]
        module["wall"] += t["end"] - t["start"]
        module["tests"] += 1
    lines.append(f"all tests: {sum(t['cpu'] for t in tests):.0f} s CPU; modules by CPU (CPU, wall, tests):")
    for name, m in sorted(modules.items(), key=lambda item: -item[1]["cpu"])[:top]:
        lines.append(f"{m['cpu']:7.1f} {m['wall']:7.1f} {m['tests']:5d}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
