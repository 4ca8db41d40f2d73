"""tests/support/cpu_per_test.py, the plugin whose figures docs/explanation/performance.md reports: one line
per test with its CPU, and the summary by worker and module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.cpu_per_test import DIR, summary

ROOT = Path(__file__).resolve().parents[2]


def test_each_test_gets_a_line_with_the_cpu_it_and_its_children_used(tmp_path: Path) -> None:
    (tmp_path / "test_two.py").write_text(
        "import subprocess, sys\n"
        "def test_busy_child():\n"
        "    subprocess.run([sys.executable, '-c', 'sum(range(3 * 10**7))'], check=True)\n"
        "def test_idle():\n"
        "    pass\n"
    )
    logs = tmp_path / "cpu"
    logs.mkdir()
    # run alone, not as the xdist worker this test may run in
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {DIR: str(logs), "PYTHONPATH": str(ROOT)}
    # With the plugin under test alone (`-p`): the installed ones (Hypothesis, xdist, …) play no part in
    # what it records, and loading them cost the child ~1.4 s of its ~1.6 s of CPU.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.cpu_per_test",
         "--rootdir", str(tmp_path), str(tmp_path / "test_two.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in (logs / "main.jsonl").read_text().splitlines()]
    cpu = {line["id"].split("::")[1]: line["cpu"] for line in lines}
    assert cpu.keys() == {"test_busy_child", "test_idle"}
    # the child's ~0.4 s of CPU is counted as the test's (CPU time, not wall: a busy machine does not move it)
    assert cpu["test_busy_child"] > cpu["test_idle"] + 0.1, cpu
    assert all(line["worker"] == "main" and line["end"] >= line["start"] for line in lines)
    text = summary(logs)
    assert text.startswith("main: 2 tests, ") and "test_two.py" in text, text
