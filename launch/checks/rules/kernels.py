"""Kernels and the GPU they run on, from declarations (`launch.config.gpus`): the GPU type's vendor and
compute capability against each attention backend's needs, and the GPU's memory as one truth."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem, did_you_mean
from launch.config.gpus import GPUS, MEGATRON_ATTENTION, SGLANG_ATTENTION, backends_for, named_gpu


@per_scope
def gpu_type_known(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A GPU type t3rl does not know cannot be checked (memory, kernels): said once, as a warning."""
    hw = scope.hardware
    if hw.gpu_type in GPUS:
        return
    guess = (
        named_gpu(hw.gpu_type) or did_you_mean(hw.gpu_type, GPUS) or did_you_mean(hw.gpu_type.upper(), GPUS)
    )
    key = scope.hw("gpu_type")
    yield Problem(
        key,
        f"GPU type '{hw.gpu_type}' is not one t3rl knows, so its kernels and memory are not checked",
        fix=f"set {key}={guess}" if guess else f"use one of {', '.join(GPUS)}",
        severity="warning",
    )


@per_scope
def memory_within_gpu_type(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """gpu_memory_gib claims no more than the GPU type has (less is a cautious setting, e.g. the usable
    memory in GiB; more lets the memory-fit checks pass layouts that run out of memory)."""
    hw = scope.hardware
    gpu = GPUS.get(hw.gpu_type)
    if gpu is None or hw.gpu_memory_gib is None or hw.gpu_memory_gib <= max(gpu.memory_gib) * 1.05:
        return
    key = ctx.latest(scope.hw("gpu_memory_gib"), scope.hw("gpu_type"))
    sizes = " or ".join(f"{m:g}" for m in gpu.memory_gib)
    yield Problem(
        key,
        f"a {hw.gpu_type} has {sizes} GiB, but gpu_memory_gib is {hw.gpu_memory_gib:g}: the memory-fit "
        "checks would accept layouts that do not fit",
        # The GPU type is what the cluster has: the memory follows it.
        fix=f"set {scope.hw('gpu_memory_gib')}={gpu.memory_gib[0]:g}",
    )


@per_scope
def attention_kernels_run_on_gpu(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """SGLang's and Megatron's attention backends run on the GPU type (and, for MLA kernels, model)."""
    hw = scope.hardware
    gpu = GPUS.get(hw.gpu_type)
    if gpu is None:
        return
    mla = ctx.run.model.architecture.mla is not None
    for field, value, table in (
        ("sglang_attention_backend", hw.sglang_attention_backend, SGLANG_ATTENTION),
        ("attention_backend", hw.attention_backend, MEGATRON_ATTENTION),
    ):
        needs = table.get(value or "")
        why = needs.refuses(gpu, mla) if needs is not None else None
        if why is None:
            continue
        # The backend moves whichever was set last: the GPU is what the cluster has.
        key = ctx.latest(scope.hw(field), scope.hw("gpu_type"))
        # Left unset, SGLang and Megatron choose a backend the GPU runs.
        chosen_by_itself = "auto" if field == "attention_backend" else "null"
        yield Problem(
            key,
            f"{field} {value} cannot run on a {hw.gpu_type} ({gpu.generation}): {why}",
            fix=f"set {scope.hw(field)}={chosen_by_itself} (the framework then picks a kernel the GPU runs; "
            f"declared to run here: {', '.join(backends_for(gpu, table, mla)) or 'none of the listed'})",
        )


RULES = (gpu_type_known, memory_within_gpu_type, attention_kernels_run_on_gpu)
