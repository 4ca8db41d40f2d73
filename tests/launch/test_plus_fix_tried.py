"""A mapping typed without '+' onto a mapping a file sets: the '+' line Hydra's merge needs is proposed
when it validates; when it is refused in turn at the mapping or a key of it, dropping what was typed comes
first and the refusal is the reason (the schema mutations' `mapping for section` kind: the '+' line
alone was the first fix of 8 and refused when applied)."""

from __future__ import annotations

import pytest

from tests.support.refusals import errors, fixed


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
    (problem,) = errors(overrides)
    assert problem.fix.startswith(f"drop `{typed}` (with '+'")
    assert f"refused in turn at {refused_at}" in problem.fix and why in problem.fix
    assert not errors(fixed(overrides, problem))


def test_a_plus_line_that_validates_is_the_fix() -> None:
    overrides = ["+experiment=bfcl_debug", "hardware.env_vars={A: b}"]
    (problem,) = errors(overrides)
    assert problem.fix == "add its keys with '+': +hardware.env_vars={A: b}"
    assert not errors(fixed(overrides, problem))
