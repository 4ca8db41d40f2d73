"""The SGLang server an eval stage starts on its checkpoint, counted like the rollout engines: its
tensor-parallel ranks (`eval.server.tp`, else `launch.config.model_size.server_tp`'s choice) divide the
model's attention heads, fit the node, and hold the bf16 weights (t3rl serves the converted HF
checkpoint) inside SGLang's static memory fraction."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_config_of, eval_key
from launch.checks.rules.resources import node_gpus
from launch.config.errors import Problem
from launch.config.model_size import WEIGHTS_SHARE, engine_gib, server_tp, sglang_tp_problem
from launch.config.schema import EvalStage


def eval_server_fits(ctx: Context) -> Iterator[Problem]:
    """Each self-served eval's TP divides the heads, fits the node, and holds the model."""
    hw = ctx.run.hardware
    arch = ctx.run.model.architecture
    heads, node = arch.num_attention_heads, node_gpus(hw)
    room = None if hw.gpu_memory_gib is None else hw.gpu_memory_gib * hw.sglang_mem_fraction * WEIGHTS_SHARE
    # a TP divides the heads: counted up to them, not to the node (`gpus_per_node=10**12` took hours)
    options = [
        v
        for v in range(1, min(node, heads) + 1)
        if sglang_tp_problem(arch, v) is None and (room is None or engine_gib(arch, v) <= room)
    ]
    for name, spec in ctx.run.stages.items():
        config = eval_config_of(ctx.run, spec) if isinstance(spec, EvalStage) else None
        if config is None or config.engine.name != "sglang" or getattr(config.engine, "url", None):
            continue
        tp = server_tp(arch, hw, config.server.tp)
        key = eval_key(name, spec.eval, "server.tp")
        weights = engine_gib(arch, tp)
        split = sglang_tp_problem(arch, tp)
        if split is not None:
            what = split
        elif tp > node:
            what = f"exceeds a node's {node} GPUs"
        elif room is not None and weights > room:
            what = (
                f"holds {weights:.0f} GiB of bf16 weights per GPU, more than sglang_mem_fraction "
                f"{hw.sglang_mem_fraction} of a {hw.gpu_memory_gib:g} GiB GPU leaves"
            )
        else:
            continue
        message = f"the SGLang server of eval stage {name} with tp {tp} {what}"
        if options:
            yield Problem(key, message, fix=f"set {key}={options[0]} (fits: {', '.join(map(str, options))})")
        else:
            # As for the rollout engines: an fp8 checkpoint or a server spanning nodes may hold it.
            yield Problem(
                key,
                message + "; no server within one node holds its bf16 weights",
                fix=f"serve an fp8 checkpoint (eval.server.extra_args) or point the stage at a server "
                f"elsewhere ({eval_key(name, spec.eval, 'engine.url')}); a smaller model otherwise",
                severity="warning",
            )


RULES = (eval_server_fits,)
