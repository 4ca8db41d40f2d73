"""GPU topology: Megatron's parallel layout against the world size and the model, SGLang's engines.

Each rule cites the check it anticipates (Megatron's initialize_model_parallel / validate_args, slime's
argument validation, SGLang's engine setup), so a config that passes here does not fail there.
"""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem
from launch.config.fixes import assign
from launch.config.model_size import sglang_tp_problem
from t3rl_core.counts import counted

ARCH = "model.architecture"
_CUSTOM_PIPELINE_SPLIT = ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers")


def fitting(total: int, others: int) -> list[int]:
    """Values v with total % (others * v) == 0: what a factor may be set to, the others unchanged."""
    if others <= 0 or total % others:
        return []
    return [v for v in range(1, total // others + 1) if (total // others) % v == 0]


def _set_one_of(
    key: str, options: list[int], why: str, scope: Scope | None = None, ctx: Context | None = None
) -> str:
    """`set key=V (one of …: why)`, V the option with which the rest of the scope validates too."""
    if not options:
        return ""
    value = options[0]
    if scope is not None and ctx is not None:
        # lazy: the layout search, only to suggest a fix for a refused layout
        from launch.checks.rules.layouts import first_valid

        value = first_valid(scope, ctx, "hardware", key.rsplit(".", 1)[1], options) or value
    return f"set {key}={value} (one of {', '.join(map(str, options))}: {why})"


@per_scope
def model_parallel_fits_world(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: the world size must be divisible by TP × PP × CP."""
    hw = scope.hardware
    world, mp = scope.world_size, scope.model_parallel
    if world % mp == 0:
        return
    factors = ("tensor_parallel", "pipeline_parallel", "context_parallel")
    key = ctx.latest(*(scope.hw(f) for f in factors), scope.hw("nodes"), scope.hw("gpus_per_node"))
    more_gpus = f"use a world size (nodes × gpus_per_node) that is a multiple of {mp}"
    # a world changed last (a hardware swap) keeps its size: the factor set last that can shrink to fit
    # it does (the fix names it, the blame stays on the key changed last)
    fewer = ""
    for factor_key in sorted((scope.hw(f) for f in factors), key=ctx.provenance.order, reverse=True):
        field = factor_key.rsplit(".", 1)[1]
        options = fitting(world, mp // getattr(hw, field))
        if options:
            fewer = _set_one_of(factor_key, options, f"world size {world} must divide by it", scope, ctx)
            break
    # a root key shared by several stages' layouts: one problem per stage, each with its own fix
    where = f" in stage {scope.stage}" if scope.stage and not key.startswith("stages.") else ""
    yield Problem(
        key,
        f"world size {world} (nodes {hw.nodes} × gpus_per_node {hw.gpus_per_node}) is not divisible by "
        f"TP {hw.tensor_parallel} × PP {hw.pipeline_parallel} × CP {hw.context_parallel} = {mp}{where} "
        "(Megatron)",
        fix=f"{fewer}; or {more_gpus}" if fewer else more_gpus,
    )


@per_scope
def expert_layout_fits_world(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: the world size must be divisible by expert-TP × EP × PP (expert groups)."""
    hw = scope.hardware
    world = scope.world_size
    size = hw.expert_tensor_parallel * hw.expert_parallel * hw.pipeline_parallel
    if world % size == 0:
        return
    key = ctx.latest(scope.hw("expert_parallel"), scope.hw("expert_tensor_parallel"))
    others = size // getattr(hw, key.rsplit(".", 1)[1])
    yield Problem(
        key,
        f"world size {world} is not divisible by expert_tensor_parallel {hw.expert_tensor_parallel} × "
        f"expert_parallel {hw.expert_parallel} × pipeline_parallel {hw.pipeline_parallel} = {size} "
        "(Megatron expert groups)",
        fix=_set_one_of(key, fitting(world, others), f"world size {world} must divide by it", scope, ctx),
    )


@per_scope
def expert_parallel_needs_experts(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: expert parallelism needs an MoE model whose expert count it divides."""
    ep = scope.hardware.expert_parallel
    moe = ctx.run.model.architecture.moe
    key = scope.hw("expert_parallel")
    if ep > 1 and moe is None:
        yield Problem(
            key,
            f"expert_parallel {ep} on a dense model ({ctx.run.model.name} has no experts)",
            fix=f"set {key}=1",
        )
    elif moe is not None and moe.num_experts % ep:
        options = [v for v in fitting(scope.world_size, 1) if moe.num_experts % v == 0]
        yield Problem(
            key,
            f"{counted(moe.num_experts, 'expert')} cannot be split evenly over expert_parallel {ep}",
            fix=_set_one_of(
                key,
                options,
                f"divides both {counted(moe.num_experts, 'expert')} and world size {scope.world_size}",
                scope,
                ctx,
            ),
        )


@per_scope
def sequence_parallel_needs_tp(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Sequence parallelism splits activations over the tensor-parallel group: it needs TP > 1."""
    hw = scope.hardware
    if hw.sequence_parallel and hw.tensor_parallel == 1:
        key = ctx.latest(scope.hw("sequence_parallel"), scope.hw("tensor_parallel"))
        yield Problem(
            key,
            "sequence_parallel needs tensor_parallel > 1 (Megatron silently turns it off at TP 1)",
            fix=f"set {scope.hw('sequence_parallel')}=false, or {scope.hw('tensor_parallel')} > 1",
        )


@per_scope
def heads_divisible_by_tp(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: attention heads and query groups must divide evenly over the tensor-parallel ranks."""
    arch = ctx.run.model.architecture
    if arch.num_query_groups and arch.num_attention_heads % arch.num_query_groups:
        return  # the architecture itself is inconsistent: architecture_consistent names it
    tp = scope.hardware.tensor_parallel
    key = scope.hw("tensor_parallel")
    for field in ("num_attention_heads", "num_query_groups"):
        count = getattr(arch, field)
        if count is not None and count % tp:
            heads, groups = arch.num_attention_heads, arch.num_query_groups or arch.num_attention_heads
            arch_key = f"model.architecture.{field}"
            if ctx.latest(key, arch_key) == arch_key:  # the count typed over the layout's TP
                # a multiple of TP the heads split into (query groups) or that splits into the groups (heads)
                fits = [
                    v
                    for v in range(tp, max(heads, groups) * tp + 1, tp)
                    if (heads % v == 0 if field == "num_query_groups" else v % groups == 0)
                ]
                yield Problem(
                    arch_key,
                    f"{field} {count} of {ctx.run.model.name} is not divisible by tensor_parallel {tp}",
                    fix=f"set {arch_key}={min(fits, key=lambda v: abs(v - count))}"
                    if fits
                    else f"set {key}=1",
                )
                return
            options = [v for v in fitting(scope.world_size, 1) if heads % v == 0 and groups % v == 0]
            yield Problem(
                key,
                f"{field} {count} of {ctx.run.model.name} is not divisible by tensor_parallel {tp}",
                fix=_set_one_of(
                    key,
                    options,
                    f"divides {heads} heads, {groups} query groups and the world size",
                    scope,
                    ctx,
                ),
            )
            return


@per_scope
def layers_divisible_by_pp(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron: layers must split evenly over pipeline stages unless the first/last stage sizes are given."""
    arch = ctx.run.model.architecture
    pp = scope.hardware.pipeline_parallel
    given = {flag for _, flag, _ in argv_flags(arch.extra_args)}  # `--flag value` or `--flag=value`
    if arch.num_layers % pp == 0 or given & set(_CUSTOM_PIPELINE_SPLIT):
        return
    key = scope.hw("pipeline_parallel")
    options = [v for v in fitting(scope.world_size, scope.model_parallel // pp) if arch.num_layers % v == 0]
    yield Problem(
        key,
        f"{counted(arch.num_layers, 'layer')} are not divisible by pipeline_parallel {pp} (Megatron)",
        fix=_set_one_of(
            key, options, f"divides {counted(arch.num_layers, 'layer')} and fits the world size", scope, ctx
        )
        + f"; or add --decoder-last-pipeline-num-layers to {ARCH}.extra_args",
    )


@per_scope
def rollout_gpus_match_layout(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Colocated engines use the training GPUs; separate engines (train_async.py) need their own GPUs."""
    hw = scope.hardware
    # the side changed last: a layout switched to colocate (or away from it) is the colocate key's
    key = ctx.latest(scope.hw("rollout_gpus"), scope.hw("colocate"))
    if hw.colocate and hw.rollout_gpus not in (None, scope.world_size):
        yield Problem(
            key,
            f"rollout_gpus {hw.rollout_gpus} under colocate: colocated SGLang engines share all "
            f"{scope.world_size} training GPUs",
            fix=f"set {scope.hw('rollout_gpus')}=null, or {scope.hw('colocate')}=false to give SGLang GPUs "
            "of its own",
        )
    if not hw.colocate and not hw.rollout_gpus:
        yield Problem(
            key,
            "colocate=false runs slime's train_async.py with separate SGLang GPUs, "
            "but rollout_gpus is not set",
            fix=f"set {scope.hw('colocate')}=true; or set {scope.hw('rollout_gpus')} to a multiple of "
            f"gpus_per_engine ({hw.gpus_per_engine}) that the nodes have spare",
        )


@per_scope
def engines_fill_rollout_gpus(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime starts one SGLang engine per gpus_per_engine GPUs; engines never span nodes in t3rl."""
    hw = scope.hardware
    key = scope.hw("gpus_per_engine")
    pool = scope.rollout_gpus
    if pool and pool % hw.gpus_per_engine:
        options = [v for v in fitting(pool, 1) if v <= hw.gpus_per_node]
        yield Problem(
            key,
            f"{pool} rollout GPUs cannot be split into engines of {hw.gpus_per_engine} GPUs",
            fix=_set_one_of(key, options, f"divides {pool} rollout GPUs", scope, ctx),
        )
    if hw.gpus_per_engine > hw.gpus_per_node:
        yield Problem(
            key,
            f"an SGLang engine of {hw.gpus_per_engine} GPUs would span nodes of {hw.gpus_per_node} GPUs "
            "(multi-node engines are not supported by t3rl's launcher)",
            fix=f"set {key}={max(v for v in range(1, hw.gpus_per_node + 1) if hw.gpus_per_node % v == 0)} "
            f"(<= {hw.gpus_per_node})",
        )


@per_scope
def engine_tp_divides_heads(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """SGLang shards attention heads over an engine's GPUs (its TP = gpus_per_engine), and splits or
    replicates the key-value heads (`launch.config.model_size.sglang_tp_problem`)."""
    arch = ctx.run.model.architecture
    gpus = scope.hardware.gpus_per_engine
    split = sglang_tp_problem(arch, gpus)
    if split is not None:
        key = scope.hw("gpus_per_engine")
        options = [
            v
            for v in fitting(arch.num_attention_heads, 1)
            if v <= scope.hardware.gpus_per_node and sglang_tp_problem(arch, v) is None
        ]
        yield Problem(
            key,
            f"SGLang tensor parallel {gpus} {split} of {ctx.run.model.name}",
            fix=_set_one_of(key, options, "shards its attention", scope, ctx),
        )


@per_scope
def dynamic_batch_needs_budget(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime: --use-dynamic-batch-size packs micro-batches up to --max-tokens-per-gpu, which must be set."""
    if scope.hardware.dynamic_batch and scope.hardware.max_tokens_per_gpu is None:
        key = scope.hw("max_tokens_per_gpu")
        yield Problem(
            key, "dynamic_batch needs a token budget", fix=f"set {key}=2048 (T3RL), or dynamic_batch=false"
        )


@per_scope
def cuda_device_max_connections(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Megatron asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with TP > 1 or CP > 1 (t3rl sets it itself)."""
    hw = scope.hardware
    value = hw.env_vars.get("CUDA_DEVICE_MAX_CONNECTIONS")
    if (hw.tensor_parallel > 1 or hw.context_parallel > 1) and value not in (None, "1"):
        key = scope.hw("env_vars") + ".CUDA_DEVICE_MAX_CONNECTIONS"
        yield Problem(
            key,
            f"CUDA_DEVICE_MAX_CONNECTIONS={value} with TP {hw.tensor_parallel} / CP {hw.context_parallel}: "
            "Megatron requires 1 to order its communication kernels",
            fix=f"set {assign(ctx.data, key, repr('1'))} "
            f"(or remove {key}: t3rl sets it to 1 in the Ray runtime env)",
        )


@per_scope
def mla_attention_backend(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """slime's scripts drop Megatron's flash backend for MLA models (its MLA head sizes differ)."""
    if ctx.run.model.architecture.mla is not None and scope.hardware.attention_backend == "flash":
        key = scope.hw("attention_backend")
        yield Problem(
            key,
            f"{ctx.run.model.name} uses multi-latent attention; slime's run scripts say to drop "
            "--attention-backend flash for MLA models (its deepseek-r1 script keeps it on newer stacks)",
            fix=f"set {key}=auto unless your Transformer Engine supports MLA with flash attention",
            severity="warning",
        )


RULES = (
    model_parallel_fits_world,
    expert_layout_fits_world,
    expert_parallel_needs_experts,
    sequence_parallel_needs_tp,
    heads_divisible_by_tp,
    layers_divisible_by_pp,
    rollout_gpus_match_layout,
    engines_fill_rollout_gpus,
    engine_tp_divides_heads,
    dynamic_batch_needs_budget,
    cuda_device_max_connections,
    mla_attention_backend,
)
