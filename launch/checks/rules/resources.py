"""GPU resources: memory per GPU for the layout, and GPU counts against what a node has.

The memory estimate follows what slime runs: Megatron in bf16 with the distributed optimizer (slime
sets `use_distributed_optimizer`), fp32 gradient buffers (`--accumulate-allreduce-grads-in-fp32`) and
Adam's fp32 master weights and moments sharded over the data-parallel ranks; activations for one
micro-batch of `max_tokens_per_gpu` tokens (Korthikanti et al.'s 34·s·h bytes per layer with flash
attention, divided by TP under sequence parallelism), kept per layer under full recompute, plus the
fp32 logits. Under colocate, SGLang's weights and KV cache are offloaded while Megatron trains, so the
two are checked separately. It is an estimate: it rejects layouts that cannot fit, not tight ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product

from launch.checks.context import Context, Scope, per_scope
from launch.checks.model_options import largest_option, model_option
from launch.checks.rules.layouts import TRYING, trying
from launch.config.errors import Problem
from launch.config.model_size import GIB, engine_gib, param_counts
from launch.config.schema import HardwareConfig, MegatronArch

# CUDA context, NCCL buffers and allocator fragmentation per GPU.
_OVERHEAD_GIB = 6.0
# bf16 weights (2) + fp32 gradient buffer (4); Adam's fp32 master copy + two moments (12) are sharded.
_WEIGHT_GRAD_BYTES = 6
_OPTIMIZER_BYTES = 12


def training_gib(arch: MegatronArch, hw: HardwareConfig, tokens: int) -> float:
    """Estimated peak memory of one training GPU, GiB."""
    counts = param_counts(arch)
    # Tokens are per GPU already (max_tokens_per_gpu is a per-CP-rank budget), so CP does not appear.
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    world = hw.nodes * hw.gpus_per_node
    dense_dp = max(1, world // (tp * pp))
    expert_shards = hw.expert_parallel * hw.expert_tensor_parallel * pp
    expert_dp = max(1, world // expert_shards)
    dense = counts.dense_layers / (tp * pp) + counts.embeddings / tp
    experts = counts.experts / expert_shards
    state = dense * (_WEIGHT_GRAD_BYTES + _OPTIMIZER_BYTES / dense_dp)
    state += experts * (_WEIGHT_GRAD_BYTES + _OPTIMIZER_BYTES / expert_dp)
    h = arch.hidden_size
    layers = -(-arch.num_layers // pp)
    per_layer = 34 * tokens * h / (tp if hw.sequence_parallel else 1)
    recompute = hw.recompute
    if recompute is not None and recompute.granularity == "full":
        shard = tp if hw.sequence_parallel else 1
        activations = layers * tokens * h * 2 / shard + per_layer * min(recompute.num_layers, layers)
    elif recompute is not None:  # selective: attention recomputed, ~the 34·s·h that flash attention keeps
        activations = layers * per_layer
    else:
        activations = layers * per_layer * 1.5
    logits = tokens * arch.vocab_size / tp * 4 * (1 if hw.recompute_loss_function else 2)
    return (state + activations + logits) / GIB + _OVERHEAD_GIB


def _tokens(scope: Scope) -> int | None:
    hw, cur = scope.hardware, scope.curriculum
    if hw.dynamic_batch and hw.max_tokens_per_gpu:
        return hw.max_tokens_per_gpu
    if cur is None:
        return None
    return -(-(cur.max_context_len or cur.rollout_max_response_len) // hw.context_parallel)


@per_scope
def training_fits_gpu_memory(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Weights, gradients, optimizer state and activations per GPU fit hardware.gpu_memory_gib."""
    hw = scope.hardware
    tokens = _tokens(scope)
    if hw.gpu_memory_gib is None or tokens is None or scope.curriculum is None:
        return
    arch = ctx.run.model.architecture
    need = training_gib(arch, hw, tokens)
    if need <= hw.gpu_memory_gib:
        return
    key = ctx.latest(
        *(scope.hw(f) for f in ("tensor_parallel", "pipeline_parallel", "expert_parallel", "nodes")),
        scope.hw("gpu_memory_gib"),
        scope.hw("max_tokens_per_gpu"),
        "model.name",
        *(f"{_ARCH}{size}" for size in _SIZES),
    )
    if key.startswith(_ARCH):  # a size of the model changed last: the model is what does not fit
        yield _size_problem(key, ctx, need, scope)
        return
    swapped = key == "model.name"
    if swapped:
        key = scope.hw("nodes")
    layout = smallest_fitting_layout(scope, ctx, tokens)
    budget = _fitting_budget(arch, hw, tokens)
    if key.endswith("max_tokens_per_gpu") and budget:
        fix = f"set {key}={budget} (the largest power of two whose estimate fits)"
    elif layout:
        fix = "set " + " ".join(f"{scope.hw(k)}={v}" for k, v in layout.items())
        if layout.get("nodes", 1) > 1 and ctx.run.executor.kind == "local":
            fix += " executor=slurm"
        fix += " (the smallest layout whose estimate fits"
        fix += f"; {scope.world_size} GPUs cannot hold {param_counts(arch).total / 1e9:.0f}B parameters)"
        if "max_tokens_per_gpu" not in layout:
            fix += f", or lower {scope.hw('max_tokens_per_gpu')}"
    else:
        smaller = _largest_fitting_model(ctx, hw, tokens)
        key = "model.name" if swapped and smaller else key  # the model the user chose: swapped back
        beyond = f"more GPUs than {scope.hw('nodes')} up to 64 nodes can give"
        fix = (
            f"set model={smaller} (the largest model option this layout holds); or {beyond}"
            if smaller
            else (f"use a smaller model, or {beyond}")
        )
    yield Problem(
        key,
        f"{ctx.run.model.name} needs ~{need:.0f} GiB per GPU to train with TP {hw.tensor_parallel} × "
        f"PP {hw.pipeline_parallel} × EP {hw.expert_parallel} on {scope.world_size} GPUs "
        f"({tokens} tokens per micro-batch); a {hw.gpu_type} has {hw.gpu_memory_gib:g} GiB",
        fix=fix,
    )


_ARCH = "model.architecture."
# The architecture's sizes the estimate counts (model_size.param_counts, the activations and logits).
_SIZES = ("vocab_size", "hidden_size", "ffn_hidden_size", "num_layers", "num_attention_heads", "kv_channels")


def _size_problem(key: str, ctx: Context, need: float, scope: Scope) -> Problem:
    """A model size set after the layout that no GPU of it holds: blamed on that size, the fix its model
    option's value (or the layout fix when the option does not declare it)."""
    hw = scope.hardware
    field = key.removeprefix(_ARCH)
    option = model_option(ctx.run.model.name, ctx.config_dirs)
    declared = option.architecture.get(field) if option is not None else None
    value = getattr(ctx.run.model.architecture, field)
    return Problem(
        key,
        f"{field} {value} makes {ctx.run.model.name} need ~{need:.0f} GiB per GPU to train with TP "
        f"{hw.tensor_parallel} × PP {hw.pipeline_parallel} on {scope.world_size} GPUs; a {hw.gpu_type} "
        f"has {hw.gpu_memory_gib:g} GiB",
        fix=f"set {key}={declared} (model/{ctx.run.model.name}.yaml's value)"
        if isinstance(declared, int) and declared != value
        else f"set {key} to the checkpoint's value (config.json)",
    )


def _largest_fitting_model(ctx: Context, hw: HardwareConfig, tokens: int) -> str | None:
    """The model option with the most parameters whose training estimate fits this layout, if any
    (a synthetic option is built offline, never a replacement for a released model)."""
    return largest_option(
        ctx.config_dirs,
        lambda option, arch: (
            not option.synthetic and training_gib(arch, hw, tokens) <= (hw.gpu_memory_gib or 0)
        ),
    )


def smallest_fitting_layout(scope: Scope, ctx: Context, tokens: int) -> dict[str, int]:
    """Changed hardware fields of the smallest fitting layout (fewest nodes, then least PP, TP, EP)."""
    if TRYING.get():
        return {}

    hw, arch = scope.hardware, ctx.run.model.architecture
    current = {
        f: getattr(hw, f) for f in ("nodes", "tensor_parallel", "pipeline_parallel", "expert_parallel")
    }
    best: tuple[int, int, int, int] | None = None
    chosen: dict[str, int] = {}
    for layout in candidate_layouts(hw, arch):
        if best is not None and layout["nodes"] > best[0]:
            break
        if hw.sequence_parallel and layout["tensor_parallel"] == 1:
            continue
        candidate = hw.model_copy(update=layout)
        if training_gib(arch, candidate, tokens) > (hw.gpu_memory_gib or 0):
            continue
        rank = (
            layout["nodes"],
            layout["pipeline_parallel"],
            layout["tensor_parallel"],
            layout["expert_parallel"],
        )
        if best is not None and rank >= best:
            continue
        trial = scope._replace(hardware=candidate)
        with trying():
            if any(p.severity == "error" for rule in ctx.scope_checks for p in rule(trial, ctx)):
                continue
        best, chosen = rank, layout
    return {k: v for k, v in chosen.items() if current[k] != v}


def _fitting_budget(arch: MegatronArch, hw: HardwareConfig, tokens: int) -> int | None:
    budget = 1 << (tokens.bit_length() - 1)
    while budget >= 256:
        if training_gib(arch, hw, budget) <= (hw.gpu_memory_gib or 0):
            return budget
        budget //= 2
    return None


@per_scope
def engine_weights_fit(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """An SGLang engine holds its weight shard inside mem_fraction_static of each of its GPUs."""
    hw = scope.hardware
    if hw.gpu_memory_gib is None:
        return
    arch = ctx.run.model.architecture
    room = hw.gpu_memory_gib * hw.sglang_mem_fraction
    if engine_gib(arch, hw.gpus_per_engine) <= room * 0.9:
        return
    heads = arch.num_attention_heads
    pool = scope.rollout_gpus or scope.world_size
    options = [
        v
        for v in range(hw.gpus_per_engine + 1, hw.gpus_per_node + 1)
        if heads % v == 0 and pool % v == 0 and engine_gib(arch, v) <= room * 0.9
    ]
    key = scope.hw("gpus_per_engine")
    weights = engine_gib(arch, hw.gpus_per_engine)
    share = scope.hw("sglang_mem_fraction")
    if ctx.latest(key, share) == share:  # the share typed last is the side changed: a bound on it
        key, options = share, []
    message = (
        f"an SGLang engine of {hw.gpus_per_engine} GPU(s) holds {weights:.0f} GiB of bf16 weights per GPU, "
        f"but sglang_mem_fraction {hw.sglang_mem_fraction} of {hw.gpu_memory_gib:g} GiB "
        f"leaves {room:.0f} GiB "
        "(weights and KV cache)"
    )
    if key == share:
        needed = weights / (hw.gpu_memory_gib * 0.9)
        yield Problem(key, message, fix=f"set {key} > {needed:.2f} (the weights' share, before any KV cache)")
    elif options:
        yield Problem(key, message, fix=f"set {key}={options[0]} (fits: {', '.join(map(str, options))})")
    else:
        yield Problem(
            key,
            message + "; no engine within one node fits",
            fix="serve an fp8 checkpoint or engines spanning nodes (not supported by t3rl's launcher); "
            "a smaller model otherwise",
            severity="warning",
        )


def node_gpus(hw: HardwareConfig) -> int:
    return hw.node_gpus or hw.gpus_per_node


@per_scope
def layout_fits_nodes(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Training + separate rollout GPUs fit the nodes; one machine's Ray head never claims more GPUs."""
    hw = scope.hardware
    have = node_gpus(hw)
    if hw.gpus_per_node > have:
        key = ctx.latest(scope.hw("gpus_per_node"), scope.hw("node_gpus"))
        yield Problem(
            key,
            f"gpus_per_node {hw.gpus_per_node} but a node has node_gpus {have}",
            fix=f"set {scope.hw('gpus_per_node')}={have}",
        )
        return
    rollout = _separate_rollout_gpus(scope)
    total = scope.world_size + rollout
    if rollout and total > hw.nodes * have:
        spare = hw.nodes * have - scope.world_size
        key = ctx.latest(scope.hw("rollout_gpus"), scope.hw("colocate"), scope.hw("node_gpus"))
        fitting_gpn = [g for g in range(hw.gpus_per_node - 1, 0, -1) if hw.nodes * (have - g) >= rollout]
        if spare > 0:
            fix = f"set {scope.hw('rollout_gpus')}={spare} (the GPUs the nodes have beyond training)"
        elif fitting_gpn:
            fix = (
                f"set {scope.hw('gpus_per_node')}={fitting_gpn[0]} (train on fewer GPUs of each node, "
                f"leaving {rollout} for SGLang)"
            )
        else:
            fix = f"set {scope.hw('colocate')}=true {scope.hw('rollout_gpus')}=null"
        yield Problem(
            key,
            f"{scope.world_size} training GPUs + {rollout} separate rollout GPUs = {total}, but "
            f"{hw.nodes} node(s) × {have} GPUs have {hw.nodes * have} "
            f"(hardware.node_gpus; unset = gpus_per_node)",
            fix=fix + f"; or set {scope.hw('node_gpus')} to what a node really has",
        )
        return


@per_scope
def local_ray_head_fits_node(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """The local executor's one Ray head (`ray start --num-gpus N`) claims GPUs of this machine only."""
    hw = scope.hardware
    have = node_gpus(hw)
    total = scope.world_size + _separate_rollout_gpus(scope)
    beyond_cluster = total > hw.nodes * have  # reported by layout_fits_nodes
    if ctx.run.executor.kind != "local" or total <= have or hw.gpus_per_node > have or beyond_cluster:
        return
    yield Problem(
        ctx.latest("executor.kind", scope.hw("nodes")),
        f"the local executor starts one Ray head on this machine with `ray start --num-gpus {total}`, "
        f"but a node has {have} GPUs ({hw.nodes} node(s) of the layout)",
        fix="set executor=slurm (one Ray head per job over all nodes), or executor=ray for a running cluster",
    )


def _separate_rollout_gpus(scope: Scope) -> int:
    cur = scope.curriculum
    if scope.hardware.colocate or cur is None or cur.mode == "sft":
        return 0
    return scope.rollout_gpus


RULES = (layout_fits_nodes, local_ray_head_fits_node, training_fits_gpu_memory, engine_weights_fit)


def candidate_layouts(hw: HardwareConfig, arch: MegatronArch) -> Iterator[dict[str, int]]:
    """Parallel layouts over growing node counts, with Megatron's divisibility rules already met."""
    heads, groups = arch.num_attention_heads, arch.num_query_groups or arch.num_attention_heads
    tps = [t for t in range(1, hw.gpus_per_node + 1) if hw.gpus_per_node % t == 0]
    tps = [t for t in tps if heads % t == 0 and groups % t == 0]
    experts = arch.moe.num_experts if arch.moe else 1
    for nodes in range(hw.nodes, 65):
        world = nodes * hw.gpus_per_node
        # a pipeline stage holds at least one GPU: stages past the world are never a layout (and a
        # layer count typed far past any model's is not listed to be tried)
        for tp, pp in product(tps, range(1, min(arch.num_layers, world) + 1)):
            if arch.num_layers % pp or world % (tp * pp * hw.context_parallel):
                continue
            eps = [e for e in range(1, world // pp + 1) if experts % e == 0 and world % (e * pp) == 0]
            for ep in eps if arch.moe else [1]:
                yield {"nodes": nodes, "tensor_parallel": tp, "pipeline_parallel": pp, "expert_parallel": ep}
