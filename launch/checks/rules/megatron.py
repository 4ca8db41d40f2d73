"""Megatron's needs that span the config, not only the argv: the number format and kernels the
pass-through flags turn on against the GPU type (`launch.config.gpus.MEGATRON_NUMERICS`), the model's
sizes and pipeline split against the parallel layout, a uniform recompute's chunk against each
pipeline block's layers, the attention backend against context
parallelism, and the learning-rate schedule's flags against the train stage's length. The flags'
relations among themselves are slime's and Megatron's own assertions, declared in
`launch.plan.slime_constraints` and checked on the built argv."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from launch.checks.context import Context, Scope, per_scope
from launch.checks.rules.layouts import first_valid
from launch.checks.rules.topology import fitting
from launch.config.argv_tokens import flags_on, without_flag
from launch.config.errors import Problem
from launch.config.fixes import list_override
from launch.config.gpus import GPUS, MEGATRON_NUMERICS
from t3rl_core.counts import counted

EXTRA = "model.architecture.extra_args"
FIRST, LAST = "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"
# Megatron's schedule flags that only a decaying schedule reads.
_DECAY_FLAGS = ("--lr-decay-iters", "--min-lr")


def _dropped(extra: Sequence[str], prefix: str) -> list[str]:
    """`extra` without the flags that start with `prefix` (a family such as --fp8) and their values."""
    return without_flag(extra, prefix, prefix=True)


@per_scope
def numerics_run_on_gpu(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """The number format (bf16 by default, fp16, fp8, fp4) and MoE kernels run on the GPU type."""
    gpu = GPUS.get(scope.hardware.gpu_type)
    if gpu is None:
        return
    extra = list(ctx.run.model.architecture.extra_args)
    on = set(flags_on(extra))
    if "--fp16" not in on:
        on.add("--bf16")
    gpu_key = scope.hw("gpu_type")
    for flag, needs in MEGATRON_NUMERICS.items():
        why = needs.refuses(gpu, ctx.run.model.architecture.mla is not None) if flag in on else None
        if why is None:
            continue
        where = f"{scope.hardware.gpu_type} ({gpu.generation})"
        if flag == "--bf16":
            yield Problem(
                gpu_key,
                f"slime trains in bf16 unless --fp16 is given, and bf16 cannot run on a {where}: {why}",
                fix=f"set {list_override(EXTRA, [*extra, '--fp16'])} (train in fp16 with loss scaling)",
            )
            continue
        # The flag's family goes with it (--fp8-recipe, --fp8-param-gather need --fp8-format).
        family = flag.rsplit("-", 1)[0]
        yield Problem(
            ctx.latest(EXTRA, gpu_key),
            f"{flag} cannot run on a {where}: {why}",
            fix=f"set {list_override(EXTRA, _dropped(extra, family))} (drop the {family}* flags)",
        )


@per_scope
def linear_layers_split_over_tp(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron's parallel linear layers divide their sizes exactly: the MLP's ffn_hidden_size over the
    tensor-parallel ranks, an expert's moe_ffn_hidden_size over the expert-tensor-parallel ranks."""
    arch, hw = ctx.run.model.architecture, scope.hardware
    pairs = [("ffn_hidden_size", arch.ffn_hidden_size, "tensor_parallel")]
    if arch.moe is not None:
        pairs.append(("moe.moe_ffn_hidden_size", arch.moe.moe_ffn_hidden_size, "expert_tensor_parallel"))
    for field, size, factor in pairs:
        ranks = getattr(hw, factor)
        if size % ranks == 0:
            continue
        key = scope.hw(factor)
        heads = arch.num_attention_heads if factor == "tensor_parallel" else 1
        options = [v for v in fitting(scope.world_size, 1) if size % v == 0 and heads % v == 0]
        value = first_valid(scope, ctx, "hardware", factor, options) or 1
        # Sequence parallelism splits over the tensor-parallel ranks: at TP 1 it goes too.
        sp_off = factor == "tensor_parallel" and value == 1 and hw.sequence_parallel
        also = f" {scope.hw('sequence_parallel')}=false" if sp_off else ""
        what = " and the attention heads" if heads > 1 else ""
        yield Problem(
            ctx.latest(key, f"model.architecture.{field}"),
            f"{field} {size} of {ctx.run.model.name} does not split over {factor} {ranks} "
            "(Megatron's parallel linear layers divide it exactly)",
            fix=f"set {key}={value}{also} (divides {size}{what})",
        )


@per_scope
def uneven_pipeline_split(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron's uneven pipeline: the layers the first and last stages do not take split evenly over the
    stages between them (and there are some exactly when there are such stages)."""
    pp, arch = scope.hardware.pipeline_parallel, ctx.run.model.architecture
    extra = list(arch.extra_args)
    given = flags_on(extra)
    first, last = _number(given.get(FIRST)), _number(given.get(LAST))
    if pp == 1 or (first is None and last is None):
        return  # PP 1 with these flags is slime's own assertion (launch.plan.slime_constraints)
    middle_layers = arch.num_layers - (first or 0) - (last or 0)
    middle_stages = pp - (first is not None) - (last is not None)
    if middle_stages == 0 and middle_layers == 0:
        return
    if middle_stages > 0 and middle_layers > 0 and middle_layers % middle_stages == 0:
        return
    # The stages before the last take num_layers // pp each; the last takes what is left (>= that).
    share = arch.num_layers // pp
    split = [
        *_dropped(_dropped(extra, FIRST), LAST),
        LAST,
        str(arch.num_layers - (pp - 1) * share),
    ]
    yield Problem(
        ctx.latest(EXTRA, scope.hw("pipeline_parallel")),
        f"{middle_layers:g} layers are left to {middle_stages} middle pipeline stages of {pp} "
        f"({counted(arch.num_layers, 'layer')}; {_stage_sizes(first, last)}): Megatron needs them split "
        "evenly",
        fix=f"set {list_override(EXTRA, split)}",
    )


@per_scope
def attention_backend_fits_layout(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Transformer Engine runs context parallelism in its flash and fused kernels only (it drops the
    unfused one), and Megatron's local backend needs its local layer spec (`--spec local`)."""
    hw = scope.hardware
    key = scope.hw("attention_backend")
    if hw.context_parallel > 1 and hw.attention_backend in ("unfused", "local"):
        yield Problem(
            ctx.latest(key, scope.hw("context_parallel")),
            f"attention_backend {hw.attention_backend} with context_parallel {hw.context_parallel}: "
            "Transformer Engine's context parallelism runs in its flash and fused kernels only",
            fix=f"set {key}=auto",
        )
    elif hw.attention_backend == "local" and "local" not in flags_on(
        ctx.run.model.architecture.extra_args
    ).get("--spec", []):
        yield Problem(
            key,
            "attention_backend local needs Megatron's local layer spec (--spec local), which is not given",
            fix=f"set {key}=auto",
        )


@per_scope
def expert_and_tensor_parallel_need_sp(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: with expert and tensor parallelism, sequence parallelism must be used (it warns)."""
    hw = scope.hardware
    if hw.expert_parallel > 1 and hw.tensor_parallel > 1 and not hw.sequence_parallel:
        key = ctx.latest(scope.hw("sequence_parallel"), scope.hw("expert_parallel"))
        yield Problem(
            key,
            f"expert_parallel {hw.expert_parallel} with tensor_parallel {hw.tensor_parallel} and no "
            "sequence_parallel: Megatron says sequence parallelism must be used with both",
            fix=f"set {scope.hw('sequence_parallel')}=true",
            severity="warning",
        )


@per_scope
def schedule_flags_take_effect(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Decay flags are read by a decaying schedule only, and a decay shorter than the training leaves
    the rest of it at --min-lr (0 by default): both run without a word, and are probably not meant."""
    cur = scope.curriculum
    if cur is None:
        return
    extra = list(ctx.run.model.architecture.extra_args)
    given = flags_on(extra)
    style = cur.optimizer.lr_decay_style
    style_key = scope.cur("optimizer.lr_decay_style")
    for flag in _DECAY_FLAGS:
        if flag in given and style == "constant":
            yield Problem(
                EXTRA,
                f"{flag} has no effect: optimizer.lr_decay_style is constant",
                fix=f"set {list_override(EXTRA, _dropped(extra, flag))}, or {style_key}=cosine",
                severity="warning",
            )
    decay = _number(given.get("--lr-decay-iters"))
    steps = _train_iters(scope)
    if style != "constant" and decay is not None and steps is not None and decay < steps:
        yield Problem(
            EXTRA,
            f"--lr-decay-iters {decay:g} < the {steps} optimizer steps of stage '{scope.stage}': the "
            f"learning rate stays at --min-lr for the last {steps - decay:g} steps",
            fix=f"set {list_override(EXTRA, _dropped(extra, '--lr-decay-iters'))} "
            "(slime then decays over the whole stage)",
            severity="warning",
        )


# Megatron's activation recomputation against the layers each pipeline stage holds. Under a full
# recompute of method uniform, Megatron (TransformerBlock._checkpointed_forward at the commit
# `launch.plan.slime_option_table` names) walks a block's layers in chunks of `recompute.num_layers`,
# each `range(start, start + num_layers)`, never cut at the block's end: a block whose layer count the
# chunk does not divide reads a layer past its last, an IndexError at the train job's first forward. A
# block is one pipeline stage's layers (an uneven pipeline's first and last stages their own counts), or
# one virtual stage's. The block method recomputes the first `num_layers` layers and runs the rest
# plainly, so any count works there.
VIRTUAL_LAYERS = "--num-layers-per-virtual-pipeline-stage"
VIRTUAL_STAGES = "--num-virtual-stages-per-pipeline-rank"


def block_sizes(scope: Scope, ctx: Context) -> set[int] | None:
    """The layer counts of the transformer blocks Megatron builds on the pipeline ranks of this scope;
    None when the split is itself invalid (the pipeline rules refuse it) or not read from a number."""
    arch, pp = ctx.run.model.architecture, scope.hardware.pipeline_parallel
    given = flags_on(list(arch.extra_args))
    try:
        first, last, virtual_layers, virtual_stages = (
            int(given[flag][-1]) if given.get(flag) else None
            for flag in (FIRST, LAST, VIRTUAL_LAYERS, VIRTUAL_STAGES)
        )
    except ValueError:
        return None
    if pp == 1 or (first is None and last is None):
        if arch.num_layers % pp:
            return None
        sizes = {arch.num_layers // pp}
    else:
        middle_stages = pp - (first is not None) - (last is not None)
        middle = arch.num_layers - (first or 0) - (last or 0)
        if middle < 0 or (middle_stages and middle % middle_stages) or (not middle_stages and middle):
            return None
        sizes = {size for size in (first, last) if size is not None}
        if middle_stages:
            sizes.add(middle // middle_stages)
    if virtual_layers is not None:
        return {virtual_layers}
    if virtual_stages is not None:
        if any(size % virtual_stages for size in sizes):
            return None
        sizes = {size // virtual_stages for size in sizes}
    return {size for size in sizes if size > 0} or None


@per_scope
def uniform_chunks_fit_each_block(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """A uniform full recompute's chunk of `recompute.num_layers` layers divides every block's layers."""
    recompute = scope.hardware.recompute
    # the root hardware of a config without train stages: no Megatron model is built
    if (
        scope.stage is None
        or recompute is None
        or recompute.granularity != "full"
        or recompute.method != "uniform"
    ):
        return
    sizes = block_sizes(scope, ctx)
    if sizes is None or all(size % recompute.num_layers == 0 for size in sizes):
        return
    whole = math.gcd(*sizes)
    chunk = max(d for d in range(1, min(recompute.num_layers, whole) + 1) if whole % d == 0)
    key = scope.hw("recompute.num_layers")
    shown = ", ".join(str(size) for size in sorted(sizes))
    yield Problem(
        ctx.latest(key, scope.hw("pipeline_parallel"), "model.architecture.num_layers"),
        f"a uniform recompute walks each pipeline block's layers ({shown} here: "
        f"{counted(ctx.run.model.architecture.num_layers, 'layer')} over pipeline_parallel "
        f"{scope.hardware.pipeline_parallel}) in chunks of recompute.num_layers {recompute.num_layers}, "
        "and Megatron does not cut the last chunk at the block's end: it reads a layer past the last, an "
        "IndexError at the train job's first forward",
        fix=f"set {key}={chunk} (divides {shown} layers); or set {scope.hw('recompute.method')}=block "
        f"(recomputes the first {counted(recompute.num_layers, 'layer')} of each block, any count)",
    )


def _stage_sizes(first: float | None, last: float | None) -> str:
    sizes = [
        f"{name} stage {size:g}" for name, size in (("first", first), ("last", last)) if size is not None
    ]
    return ", ".join(sizes)


def _number(values: list[str] | None) -> float | None:
    try:
        return float(values[-1]) if values else None
    except ValueError:
        return None


def _train_iters(scope: Scope) -> int | None:
    """slime's optimizer steps of a train stage (its train_iters), when its length is in rollouts."""
    cur = scope.curriculum
    if cur is None or cur.num_rollout is None:
        return None
    samples = cur.rollout_batch_size * cur.n_samples_per_prompt
    batch = cur.global_batch_size or (
        samples // cur.num_steps_per_rollout if cur.num_steps_per_rollout else 0
    )
    return cur.num_rollout * samples // batch if batch else None


RULES = (
    numerics_run_on_gpu,
    linear_layers_split_over_tp,
    uneven_pipeline_split,
    attention_backend_fits_layout,
    expert_and_tensor_parallel_need_sp,
    schedule_flags_take_effect,
    uniform_chunks_fit_each_block,
)
