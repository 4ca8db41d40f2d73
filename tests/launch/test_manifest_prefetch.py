"""launch.run.rundir.prefetched_manifest_facts: the git state and platform string are computed on a thread
started early, used by the next manifest of the same checkout inside the block, and only by that one."""

from __future__ import annotations

import platform
import threading
from pathlib import Path

import pytest

from launch.run import rundir
from launch.run.rundir import collect_manifest, git_state, prefetched_manifest_facts

REPO = Path(__file__).resolve().parents[2]


def manifest(root: Path) -> dict:
    return collect_manifest(
        run_name="r", run_id="r-1", t3rl_root=root, topology={}, seeds={}, overrides=[], config_dirs=[]
    )


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The checkouts whose git state the calling thread itself computed."""
    calls: list[Path] = []

    def counting(repo: Path) -> dict:
        if threading.current_thread() is threading.main_thread():
            calls.append(repo)
        return git_state(repo)

    monkeypatch.setattr(rundir, "git_state", counting)
    return calls


def test_the_next_manifest_uses_the_prefetched_facts_once(git_calls) -> None:
    with prefetched_manifest_facts(REPO):
        first = manifest(REPO)
        assert git_calls == []
        assert first["git"] == git_state(REPO) and first["git"]["sha"]
        assert first["launcher"]["platform"] == platform.platform()
        second = manifest(REPO)
        assert git_calls == [REPO] and second["git"] == first["git"]


def test_facts_prefetched_for_another_checkout_are_not_used(git_calls) -> None:
    with prefetched_manifest_facts(Path("/")):  # not a checkout: its facts say sha None
        assert manifest(REPO)["git"]["sha"] is not None
    assert git_calls == [REPO]


def test_an_unused_prefetch_ends_with_its_block(git_calls) -> None:
    with prefetched_manifest_facts(REPO):
        pass
    manifest(REPO)
    assert git_calls == [REPO]
