"""tests/support/once_per_run.py: a value is computed by the first process of a run that asks and read
back, equal, by every other; outside the suite it is computed each time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.once_per_run import once_per_run

REPO = Path(__file__).resolve().parents[2]
# A process of the run that asks for the value: it prints whether it computed it, then the value.
ASKER = """
import sys
from tests.support.once_per_run import once_per_run
computed = []
def compute():
    computed.append(1)
    return {"cases": [("a", 1), ("b", 2)], "by": sys.argv[1]}
value = once_per_run("sample", compute)
print(bool(computed), value)
"""


def test_the_first_process_computes_and_the_others_read_its_value(tmp_path: Path) -> None:
    env = {"T3RL_TEST_SHARED_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", ASKER, name], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for name in ("first", "second", "third")
    ]
    value = "{'cases': [('a', 1), ('b', 2)], 'by': 'first'}"
    assert outputs == [f"True {value}", f"False {value}", f"False {value}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample.lock", "sample.pickle"]


def test_outside_the_suite_it_is_computed_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("T3RL_TEST_SHARED_DIR", raising=False)
    calls: list[int] = []
    assert [once_per_run("n", lambda: calls.append(1) or len(calls)) for _ in range(2)] == [1, 2]


def test_names_are_kept_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T3RL_TEST_SHARED_DIR", str(tmp_path))
    assert once_per_run("a", lambda: "A") == "A"
    assert once_per_run("b", lambda: "B") == "B"
    assert once_per_run("a", lambda: "other") == "A"
