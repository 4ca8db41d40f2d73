"""An alternative a fix offers is dropped only for a refusal of its own: an error the line as typed
already had stays the line's when the alternative moves its figures or its key (deepseek_v3's memory
estimate, ~4660 → ~4658 GiB, blamed on hardware.nodes once recompute is typed). Read as the
alternative's, both of the recompute error's alternatives were dropped and the error kept no fix."""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError


def test_an_alternative_is_not_blamed_for_an_error_the_line_already_had() -> None:
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=retool", "model=deepseek_v3"])
    problems = refused.value.problems
    recompute = next(p for p in problems if "recompute" in p.message and p.severity == "error")
    assert recompute.fix.startswith("set hardware.recompute.num_layers=1"), recompute.fix
    assert "hardware.recompute.method=block" in recompute.fix, recompute.fix
    assert all(p.fix for p in problems if p.severity == "error"), [p.key for p in problems if not p.fix]
