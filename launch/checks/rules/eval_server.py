"""The SGLang server an eval stage starts on its checkpoint: its tensor-parallel ranks divide the
model's attention heads, fit the node, and hold the bf16 weights (t3rl serves the converted HF
checkpoint, always bf16) inside SGLang's static memory fraction — the same counting as the rollout
engines', but an error: no fp8 checkpoint or multi-node engine can come to the rescue here."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.eval_configs import eval_config_of, eval_key
from launch.checks.rules.resources import engine_gib, node_gpus
from launch.config.errors import Problem
from launch.config.schema import EvalStage


def eval_server_fits(ctx: Context) -> Iterator[Problem]:
    """Each self-served eval's TP divides the heads, fits the node, and holds the model."""
    hw = ctx.run.hardware
    arch = ctx.run.model.architecture
    heads = arch.num_attention_heads
    room = (hw.gpu_memory_gib or 0) * hw.sglang_mem_fraction * 0.9
    for name, spec in ctx.run.stages.items():
        config = eval_config_of(ctx.run, spec) if isinstance(spec, EvalStage) else None
        if config is None or config.engine.name != "sglang" or getattr(config.engine, "url", None):
            continue
        tp = config.server.tp or hw.gpus_per_engine
        key = eval_key(name, spec.eval, "server.tp") if config.server.tp else eval_key(name, {}, "server.tp")
        options = [
            v
            for v in range(1, node_gpus(hw) + 1)
            if heads % v == 0 and (hw.gpu_memory_gib is None or engine_gib(arch, v) <= room)
        ]
        weights = engine_gib(arch, tp)
        if heads % tp == 0 and tp <= node_gpus(hw) and (hw.gpu_memory_gib is None or weights <= room):
            continue
        what = (
            f"does not divide {heads} attention heads"
            if heads % tp
            else f"exceeds a node's {node_gpus(hw)} GPUs"
            if tp > node_gpus(hw)
            else f"holds {weights:.0f} GiB of bf16 weights per GPU, more than sglang_mem_fraction "
            f"{hw.sglang_mem_fraction} of a {hw.gpu_memory_gib:g} GiB GPU leaves"
        )
        fix = (
            f"set {key}={options[0]} (fits: {', '.join(map(str, options))})"
            if options
            else f"serve {ctx.run.model.name} elsewhere and point the stage at it "
            f"({eval_key(name, spec.eval, 'engine.url')}=http://HOST:PORT): one node cannot hold its bf16 "
            "weights"
        )
        yield Problem(key, f"the SGLang server of eval stage {name} with tp {tp} {what}", fix=fix)


RULES = (eval_server_fits,)
