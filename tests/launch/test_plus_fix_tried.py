"""A mapping typed without '+' onto a mapping a file sets: the '+' line Hydra's merge needs is proposed
when it validates; when it is refused in turn at the mapping or a key of it, dropping what was typed comes
first and the refusal is the reason (the schema mutations' `mapping for section` kind: the '+' line
alone was the first fix of 8 and refused when applied)."""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from tests.support.fix_applier import apply_first_fix


def _refusals(overrides: list[str]) -> list[Problem]:
    try:
        resolve(overrides)
    except ConfigError as error:
        return [p for p in error.problems if p.severity == "error"]
    return []


@pytest.mark.parametrize(
    ("typed", "refused_at", "why"),
    [
        ("hardware.env_vars={a: 1}", "hardware.env_vars.a", "valid string"),
        ("model.chat.chat_template_kwargs={a: 1}", "model.chat.chat_template_kwargs", "reads no variable a"),
    ],
)
def test_a_plus_line_refused_in_turn_is_the_reason_to_drop_what_was_typed(
    typed: str, refused_at: str, why: str
) -> None:
    overrides = ["+experiment=bfcl_debug", typed]
    (problem,) = _refusals(overrides)
    assert problem.fix.startswith(f"drop `{typed}` (with '+'")
    assert f"refused in turn at {refused_at}" in problem.fix and why in problem.fix
    fixed = apply_first_fix(
        overrides, {"message": problem.message, "source": problem.source, "fix": problem.fix}
    )
    assert fixed is not None and not _refusals(fixed)


def test_a_plus_line_that_validates_is_the_fix() -> None:
    overrides = ["+experiment=bfcl_debug", "hardware.env_vars={A: b}"]
    (problem,) = _refusals(overrides)
    assert problem.fix == "add its keys with '+': +hardware.env_vars={A: b}"
    fixed = apply_first_fix(
        overrides, {"message": problem.message, "source": problem.source, "fix": problem.fix}
    )
    assert fixed is not None and not _refusals(fixed)
