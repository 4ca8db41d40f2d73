"""A GPU type pasted as the vendor's tool prints it (`nvidia-smi --query-gpu=name`: `NVIDIA H100 80GB HBM3`;
`rocm-smi`: `AMD Instinct MI300X`) is refused with the type it names as the first fix, a fix that validates
when applied (was: the profile's default, `H200`, whatever GPU was named). A name with no white space
t3rl does not know stays a warning, whose fix reads the same words."""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from launch.config.gpus import named_gpu
from tests.support.fix_applier import apply_first_fix


def _problems(overrides: list[str]) -> list[Problem]:
    try:
        return list(resolve(overrides).warnings)
    except ConfigError as error:
        return error.problems


@pytest.mark.parametrize(
    ("printed", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 NVL", "H100"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("Tesla V100-SXM2-32GB", "V100"),
        ("NVIDIA GeForce RTX 4090", "RTX4090"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA L40S", "L40S"),
    ],
)
def test_the_words_of_a_printed_name_name_one_gpu_type(printed: str, model: str) -> None:
    assert named_gpu(printed) == model


@pytest.mark.parametrize("text", ["my gpu", "NVIDIA H100 or A100", "Quadro RTX 8000"])
def test_no_type_or_two_name_none(text: str) -> None:
    assert named_gpu(text) is None


@pytest.mark.parametrize(("printed", "model"), [("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA B200", "B200")])
def test_a_printed_name_is_refused_with_its_type_as_a_fix_that_validates(printed: str, model: str) -> None:
    overrides = ["+experiment=stage1_bfcl", f"hardware.gpu_type='{printed}'"]
    errors = [p for p in _problems(overrides) if p.severity == "error"]
    assert [p.key for p in errors] == ["hardware.gpu_type"]
    assert errors[0].fix.startswith(f"set hardware.gpu_type={model}")
    fix = {"message": errors[0].message, "source": errors[0].source, "fix": errors[0].fix}
    fixed = apply_first_fix(overrides, fix)
    assert fixed is not None
    assert not [p for p in _problems(fixed) if p.severity == "error"]


def test_an_unknown_name_without_spaces_is_warned_with_the_type_its_words_name() -> None:
    problems = _problems(["+experiment=stage1_bfcl", "hardware.gpu_type=Tesla-V100-SXM2-32GB"])
    (warning,) = [p for p in problems if p.key == "hardware.gpu_type"]
    assert warning.severity == "warning" and warning.fix == "set hardware.gpu_type=V100"
