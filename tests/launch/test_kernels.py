"""Kernel backends against the GPU they run on, read from declarations: a refusal names the key set
last and its fix validates; every declared backend runs on the GPUs its declaration admits."""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from launch.config.gpus import GPUS, MEGATRON_ATTENTION, SGLANG_ATTENTION, backends_for

S1 = "+experiment=stage1_bfcl"


def _kernel_problems(overrides: list[str]) -> list[Problem]:
    try:
        resolve([S1, *overrides])
    except ConfigError as error:
        return [p for p in error.problems if "cannot run on" in p.message or "GiB, but" in p.message]
    return []


def _with(gpu: str) -> list[str]:
    return [f"hardware.gpu_type={gpu}", f"hardware.gpu_memory_gib={GPUS[gpu].memory_gib[0]:g}"]


@pytest.mark.parametrize(
    ("gpu", "backend"),
    [
        ("B200", "fa3"),
        ("A100", "flashmla"),
        ("H100", "trtllm_mha"),
        ("MI300X", "flashinfer"),
        ("L40S", "fa4"),
    ],
)
def test_a_backend_the_gpu_cannot_run_is_refused_and_the_fix_validates(gpu: str, backend: str) -> None:
    overrides = [*_with(gpu), f"hardware.sglang_attention_backend={backend}"]
    if GPUS[gpu].vendor != "nvidia":
        overrides.append("hardware.attention_backend=auto")
    problems = _kernel_problems(overrides)
    assert problems, overrides
    fix = problems[0].fix.split(" (")[0].removeprefix("set ")
    assert _kernel_problems([*overrides, fix]) == []


@pytest.mark.parametrize("gpu", ["A100", "H100"])
def test_every_backend_declared_for_a_gpu_is_accepted(gpu: str) -> None:
    for backend in backends_for(GPUS[gpu], SGLANG_ATTENTION, mla=False):
        assert _kernel_problems([*_with(gpu), f"hardware.sglang_attention_backend={backend}"]) == [], backend


def test_declarations_cover_every_gpu_and_backend() -> None:
    for gpu in GPUS.values():
        for table in (SGLANG_ATTENTION, MEGATRON_ATTENTION):
            for needs in table.values():
                why = needs.refuses(gpu, mla=True)
                assert why is None or why.startswith("it "), why


def test_memory_claims_no_more_than_the_gpu_type_has() -> None:
    (problem,) = _kernel_problems(["hardware.gpu_type=H100"])  # h200x8's 141 GiB left in place
    assert problem.key == "hardware.gpu_type" and problem.fix == "set hardware.gpu_memory_gib=80"
    assert _kernel_problems(["hardware.gpu_type=H100", "hardware.gpu_memory_gib=80"]) == []
    # Less than the data sheet (the usable memory in GiB) is cautious, and accepted.
    assert _kernel_problems(["hardware.gpu_type=H100", "hardware.gpu_memory_gib=74.5"]) == []
