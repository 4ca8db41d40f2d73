"""`launch.config.errors.Problem` is a plain class (a frozen dataclass compiles its methods from text on
every cold command): it behaves as the frozen dataclass it replaced, written out here, does: its
constructor and defaults, credentials masked in message, source and fix (also in a copy with changes),
repr, equality, hashing, no assignment or deletion, pickling, `match`."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError, dataclass, replace

import pytest

from launch.config.errors import Problem
from launch.config.secrets import scrub_text

TOKEN = "hf_" + "abcdefghijklmnopqrstuvwxyzABCD"


@dataclass(frozen=True)
class ProblemBefore:
    key: str
    message: str
    source: str = ""
    fix: str = ""
    severity: str = "error"

    def __post_init__(self) -> None:
        for name in ("message", "source", "fix"):
            object.__setattr__(self, name, scrub_text(getattr(self, name)))


CALLS = [
    (("hardware.tensor_parallel", "3 does not divide 8"), {}),
    (("k", f"token {TOKEN} quoted"), {"source": f"override `x={TOKEN}`", "fix": f"set x={TOKEN}"}),
    ((), {"key": "", "message": "m", "severity": "warning"}),
    (("k", "m", "s", "f", "warning"), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_problem_is_the_frozen_dataclass_it_was(args: tuple[str, ...], kwargs: dict[str, str]) -> None:
    now, before = Problem(*args, **kwargs), ProblemBefore(*args, **kwargs)  # type: ignore[arg-type]
    assert repr(now) == repr(before).replace("ProblemBefore(", "Problem(")
    assert TOKEN not in repr(now)
    assert now == Problem(*args, **kwargs) and hash(now) == hash(Problem(*args, **kwargs))  # type: ignore[arg-type]
    assert now != before and now != Problem("other", "m")
    changed = now.replace(fix=f"use {TOKEN}", source="s2")
    assert repr(changed) == repr(replace(before, fix=f"use {TOKEN}", source="s2")).replace(
        "ProblemBefore(", "Problem("
    )
    assert pickle.loads(pickle.dumps(now)) == now
    match now:
        case Problem(key, message, source, fix, severity):
            assert (key, message, source, fix, severity) == (
                before.key, before.message, before.source, before.fix, before.severity,
            )  # fmt: skip
    with pytest.raises(FrozenInstanceError):
        now.key = "other"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del now.fix  # type: ignore[misc]


def test_with_source_keeps_a_source_given() -> None:
    assert Problem("k", "m", source="a").with_source("b").source == "a"
    assert Problem("k", "m").with_source("b") == Problem("k", "m", source="b")
