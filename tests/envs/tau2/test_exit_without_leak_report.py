"""No "nanobind: leaked …" report when a process exits after freezing tau2's long-lived objects.

nanobind extensions (triton, which torch._dynamo imports, so every process that builds a transformers
model has it: the suite's own pytest process, a rollout worker) report their objects still alive at
interpreter shutdown, and `gc.freeze()` keeps objects alive forever. tau2's DomainWorld freezes; the
freeze is undone at exit.
"""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from t3rl_core.envs.tau2 import evaluation


def _exit_report(freeze: str) -> subprocess.CompletedProcess[str]:
    script = f"import triton\nfrom t3rl_core.gc_freeze import freeze_long_lived\n{freeze}\n"
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "freeze",
    [
        "freeze_long_lived()",
        # The first episode runner of a rollout worker freezes its start-up heap the same way.
        "from t3rl_core.rollout.heap import freeze_startup_heap; freeze_startup_heap()",
    ],
)
def test_a_freeze_with_triton_loaded_exits_without_a_nanobind_leak_report(freeze: str) -> None:
    done = _exit_report(freeze)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "nanobind: leaked" not in done.stderr, done.stderr[:2000]


def test_the_check_can_see_a_leak() -> None:
    """A bare freeze, as tau2's evaluation did, is reported: the cases above could fail. (Once for both
    of them: the same process each time, ~0.9 s of CPU for triton's import.)"""
    bare = _exit_report("import gc; gc.freeze()")
    assert "nanobind: leaked" in bare.stderr


def test_a_domain_world_freezes_only_through_the_exit_safe_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    freezes: list[str] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append("bare"))
    monkeypatch.setattr(evaluation, "freeze_long_lived", lambda: freezes.append("exit-safe"))
    evaluation.DomainWorld("mock")
    assert freezes == ["exit-safe"]
