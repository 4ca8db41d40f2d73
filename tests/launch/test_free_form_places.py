"""A new key typed under the name of a section that takes any key lives in that section, wherever the
config holds it: `env_vars.XLA_FLAGS=…` (verl's and a shell's habit) was answered with the top level's
known keys; its place is `hardware.env_vars`, and the fix writes the value as the override must give it
(`--xla_gpu_autotune_level=0` holds `=`, which Hydra reads as syntax unquoted)."""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError


@pytest.mark.parametrize(
    ("typed", "fixed"),
    [
        ("env_vars.NCCL_DEBUG=INFO", "+hardware.env_vars.NCCL_DEBUG=INFO"),
        ("+env_vars.NCCL_DEBUG=INFO", "+hardware.env_vars.NCCL_DEBUG=INFO"),
        ("+env_vars.XLA_FLAGS='--xla_gpu_autotune_level=0'",
         "+hardware.env_vars.XLA_FLAGS='--xla_gpu_autotune_level=0'"),
    ],
)  # fmt: skip
def test_a_key_under_a_free_form_sections_name_is_placed_there(typed: str, fixed: str) -> None:
    with pytest.raises(ConfigError) as refused:
        resolve(["+experiment=stage1_bfcl", typed])
    fixes = [p.fix for p in refused.value.problems if p.severity == "error"]
    assert any(fix.endswith(f"set it where it lives: {fixed}") for fix in fixes), fixes
    resolve(["+experiment=stage1_bfcl", fixed])  # the fix validates
