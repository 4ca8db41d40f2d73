"""`StageRecord`, `RunState` and `PipelineResult` are plain classes (a dataclass compiles its methods from
text on a cold plan): each behaves as the dataclass it replaced, written out here, does: its
constructor (positional, keywords, defaults, a fresh mapping per instance, the errors state.json's
reader reports), repr, equality, no hash, `dataclasses.asdict`'s copy."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pytest

from launch.run.pipeline import PipelineResult
from launch.run.rundir import RunState, StageRecord


@dataclass
class StageRecordBefore:
    status: str
    fingerprint: str
    run_id: str
    upstream: dict[str, str] = field(default_factory=dict)
    attempts: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    returncode: int | None = None
    message: str = ""
    handle: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str | None] = field(default_factory=dict)
    code: dict[str, Any] | None = None  # the git state a stage ran with (8b8649b), as a dataclass field
    environ: dict[str, str] | None = None  # the inherited variables it ran with (hunt wave ten)


@dataclass
class RunStateBefore:
    stages: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineResultBefore:
    status: str
    decisions: list[Any]
    results: dict[str, Any] = field(default_factory=dict)


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("running", "fp", "id1"), {}),
    (("running", "fp", "id1", {"a": "id0"}), {"attempts": 1, "handle": {"pgid": 5, "cmd": ["x", 1]}}),
    ((), {"status": "succeeded", "fingerprint": "f", "run_id": "r", "outputs": {"o": None}, "message": "m"}),
    (("failed", "fp", "id1", None, 2, "t0", "t1", 3, "boom", None, None), {}),
]


def _renamed(text: str) -> str:
    return text.replace("Before(", "(")


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_stage_record_is_the_dataclass_it_was(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    now, before = StageRecord(*args, **kwargs), StageRecordBefore(*args, **kwargs)
    assert now.as_dict() == asdict(before) and list(now.as_dict()) == list(asdict(before))
    assert repr(now) == _renamed(repr(before))
    assert now == StageRecord(*args, **kwargs) and now != before
    copied = now.as_dict()
    if isinstance(now.handle, dict):
        copied["handle"]["extra"] = 1
        assert "extra" not in now.handle
    with pytest.raises(TypeError):
        hash(now)


def test_a_stage_record_left_without_mappings_gets_its_own() -> None:
    one, two = StageRecord("running", "fp", "a"), StageRecord("running", "fp", "b")
    one.upstream["x"] = "y"
    assert two.upstream == {} and two.handle == {} and two.outputs == {}


@pytest.mark.parametrize(
    "data",
    [{"status": "x", "fingerprint": "f"}, {"status": "x", "fingerprint": "f", "run_id": "r", "extra": 1}],
)
def test_a_malformed_record_fails_as_before(data: dict[str, Any]) -> None:
    with pytest.raises(TypeError) as now:
        StageRecord(**data)
    with pytest.raises(TypeError) as before:
        StageRecordBefore(**data)
    assert str(now.value) == str(before.value).replace("StageRecordBefore", "StageRecord")


def test_run_state_and_pipeline_result_are_the_dataclasses_they_were() -> None:
    record = StageRecord("running", "fp", "id1")
    assert repr(RunState()) == _renamed(repr(RunStateBefore()))
    assert repr(RunState({"s": record})) == f"RunState(stages={{'s': {record!r}}})"
    assert RunState({"s": record}) == RunState({"s": StageRecord("running", "fp", "id1")}) != RunState()
    assert RunState().stages is not RunState().stages
    assert repr(PipelineResult("planned", [1])) == _renamed(repr(PipelineResultBefore("planned", [1])))
    assert (
        PipelineResult("planned", [1]) == PipelineResult("planned", [1], {}) != PipelineResult("failed", [1])
    )
    for made in (RunState(), PipelineResult("planned", [])):
        with pytest.raises(TypeError):
            hash(made)
