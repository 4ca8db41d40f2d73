"""A setting typed by the name other frameworks give it, under its own section: initials read both ways
(`learning_rate` for `lr`, `tp` for `tensor_parallel`) and a counting word dropped (`tp_size`, Megatron's
and verl's spelling). Was: the section's known keys with no guess (`tp_size`, `learning_rate`), the
answer left to the reader. Each fix is applied and validates."""

from __future__ import annotations

import pytest

from tests.support.refusals import errors, fixed


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("hardware.tp_size=2", "hardware.tensor_parallel=2"),
        ("hardware.pp_size=2", "hardware.pipeline_parallel=2"),
        ("hardware.cp_size=2", "hardware.context_parallel=2"),
        ("stages.train.curriculum.optimizer.learning_rate=1e-6", "stages.train.curriculum.optimizer.lr=1e-6"),
    ],
)
def test_a_name_of_another_framework_is_answered_with_the_setting(typed: str, meant: str) -> None:
    overrides = ["+experiment=stage1_bfcl", typed]
    (error,) = errors(overrides)
    assert error.fix.endswith(f"e.g. {meant}")
    assert not errors(fixed(overrides, error))


def test_a_name_that_abbreviates_no_setting_gets_no_invented_guess() -> None:
    # a made-up `xy_size`: no setting has the initials xy
    (error,) = errors(["+experiment=stage1_bfcl", "hardware.xy_size=2"])
    assert "did you mean" not in error.fix
