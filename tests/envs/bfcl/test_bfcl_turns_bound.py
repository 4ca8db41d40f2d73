"""`t3rl_core.envs.bfcl.shipped.turns_bound` is never below any entry's turns (the JSON parse's
`turns_per_entry`), whatever the calls' text holds (brackets, quotes, backslashes); a data file edited
is read again; and the step-limit rule parses the ground truth only when a limit is below the bound."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.checks.rules.env_data import steps_leave_tasks_room
from launch.config.schema import TrainStage
from t3rl_core.envs.bfcl import shipped

CATEGORY = "multi_turn_base"
CALL = st.text(alphabet=st.sampled_from(list("ab[]\"\\',() {}:\n\té")), max_size=12)
GROUND_TRUTH = st.lists(st.lists(st.lists(CALL, max_size=4), max_size=9), max_size=6)


def _write(data: Path, entries: list[list[list[str]]], version: int = 4) -> None:
    answers = data / "possible_answer"
    answers.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"{CATEGORY}_{i}", "ground_truth": turns}) for i, turns in enumerate(entries)]
    (answers / f"BFCL_v{version}_{CATEGORY}.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(shipped, "_data_dir", lambda: tmp_path)
    return tmp_path


@settings(max_examples=150, deadline=None)
@given(GROUND_TRUTH, st.booleans())
def test_the_bound_is_never_below_an_entrys_turns(entries: list[list[list[str]]], ascii_only: bool) -> None:
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as tmp:
        patch.setattr(shipped, "_data_dir", lambda: Path(tmp))
        _write(Path(tmp), entries)
        bound = shipped.turns_bound([CATEGORY])
        assert bound is not None
        assert bound >= max((len(turns) for turns in entries), default=0)


def test_an_edited_data_file_is_read_again(data: Path) -> None:
    _write(data, [[["cd(folder='a')"]] * 3])
    assert shipped.turns_bound([CATEGORY]) == 3
    _write(data, [[["cd(folder='a')"]] * 3, [["ls()"], []] * 4])
    assert shipped.turns_bound([CATEGORY]) == 8
    assert max(shipped.turns_per_entry([CATEGORY]) or []) == 8
    _write(data, [[["ls()"]] * 11], version=5)  # a newer BFCL version's file is the one read
    assert shipped.turns_bound([CATEGORY]) == 11


def test_a_missing_file_bounds_nothing(data: Path) -> None:
    assert shipped.turns_bound([CATEGORY]) is None


class _Env:
    def __init__(self, bound: int | None, needed: list[int]) -> None:
        self.bound, self.needed, self.parsed = bound, needed, 0

    def model_calls_bound(self) -> int | None:
        return self.bound

    def model_calls_needed(self) -> list[int]:
        self.parsed += 1
        return self.needed


def _problems(env: _Env, *steps: int) -> list[str]:
    stages = {
        f"s{i}": TrainStage.model_construct(curriculum=SimpleNamespace(mode="rl", max_num_steps=n))
        for i, n in enumerate(steps)
    }
    ctx = SimpleNamespace(run=SimpleNamespace(stages=stages, env=env))
    return [p.key for p in steps_leave_tasks_room(ctx)]  # type: ignore[arg-type]


def test_limits_at_or_above_the_bound_read_no_task() -> None:
    env = _Env(9, [3, 9, 12])  # a bound below a task's need would be wrong: it is not consulted
    assert _problems(env, 9, 30) == [] and env.parsed == 0


def test_a_limit_below_the_bound_reads_the_tasks() -> None:
    env = _Env(9, [3, 8])
    assert _problems(env, 30, 5) == ["stages.s1.curriculum.max_num_steps"] and env.parsed == 1
    undeclared = _Env(None, [3, 8])
    assert _problems(undeclared, 30) == [] and undeclared.parsed == 1


def test_the_shipped_ground_truth_is_bounded_at_or_above_its_turns() -> None:
    categories = [
        "multi_turn_base",
        "multi_turn_miss_func",
        "multi_turn_miss_param",
        "multi_turn_long_context",
    ]
    bound, needed = shipped.turns_bound(categories), shipped.turns_per_entry(categories)
    assert bound is not None and needed
    assert max(needed) <= bound < 30  # the shipped BFCL curricula's limit: their plans parse nothing
