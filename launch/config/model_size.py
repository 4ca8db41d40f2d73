"""How big a model is, by how Megatron and SGLang shard it: parameter counts from the Megatron
architecture, the bf16 weights an SGLang server holds per GPU, and the tensor-parallel size an eval
server gets. One count for the checks (launch.checks.rules.resources, .eval_server) and the plan
(the conversion's GPU count, the eval server's TP)."""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.schema import HardwareConfig, MegatronArch
from t3rl_core.records import Record

GIB = 1024**3
# Share of SGLang's static memory its weights may take (the rest: KV cache, activations).
WEIGHTS_SHARE = 0.9


class ParamCounts(Record):
    """Parameters of the model by how Megatron shards them."""

    # Transformer layers outside the experts (attention, dense MLPs, norms, router): TP × PP.
    dense_layers: int
    # Routed experts: EP × expert-TP × PP.
    experts: int
    # Embedding and output layer: TP (on the first and last pipeline stage).
    embeddings: int

    @property
    def total(self) -> int:
        return self.dense_layers + self.experts + self.embeddings


def param_counts(arch: MegatronArch) -> ParamCounts:
    h, heads = arch.hidden_size, arch.num_attention_heads
    if arch.mla is not None:
        mla = arch.mla
        head_q = mla.qk_head_dim + mla.qk_pos_emb_head_dim
        q = h * mla.q_lora_rank + mla.q_lora_rank * heads * head_q if mla.q_lora_rank else h * heads * head_q
        kv = h * (mla.kv_lora_rank + mla.qk_pos_emb_head_dim)
        kv += mla.kv_lora_rank * heads * (mla.qk_head_dim + mla.v_head_dim)
        attention = q + kv + heads * mla.v_head_dim * h
    else:
        head_dim = arch.kv_channels or h // heads
        groups = arch.num_query_groups or heads
        attention = 2 * h * heads * head_dim + 2 * h * groups * head_dim
    mlp_mats = 3 if arch.swiglu else 2
    dense_mlp = mlp_mats * h * arch.ffn_hidden_size
    moe = arch.moe
    moe_layers = _moe_layers(arch)
    dense_layers = arch.num_layers * attention + (arch.num_layers - moe_layers) * dense_mlp
    experts = 0
    if moe is not None:
        shared = mlp_mats * h * (moe.moe_shared_expert_intermediate_size or 0)
        dense_layers += moe_layers * (shared + h * moe.num_experts)
        experts = moe_layers * moe.num_experts * mlp_mats * h * moe.moe_ffn_hidden_size
    embeddings = arch.vocab_size * h * (2 if arch.untie_embeddings_and_output_weights else 1)
    return ParamCounts(dense_layers, experts, embeddings)


def _moe_layers(arch: MegatronArch) -> int:
    if arch.moe is None:
        return 0
    freq = arch.moe.moe_layer_freq
    if isinstance(freq, list):
        return sum(freq)
    return -(-arch.num_layers // freq)  # layers 0, freq, 2·freq, … below num_layers (counted, not listed)


def engine_gib(arch: MegatronArch, gpus_per_engine: int) -> float:
    """bf16 weights of one SGLang engine's shard, GiB."""
    return param_counts(arch).total * 2 / gpus_per_engine / GIB


def sglang_tp_problem(arch: MegatronArch, tp: int) -> str | None:
    """Why SGLang cannot shard this model's attention over an engine of `tp` GPUs; None when it can. The
    query heads divide by tp, and the key-value heads either divide by it or divide it (SGLang then
    replicates each on tp / kv GPUs): its QKVParallelLinear and model files assert one or the other when
    the server loads the model. Multi-latent attention's key-value projection is one latent, split with
    the heads."""
    heads = arch.num_attention_heads
    if heads % tp:
        return f"does not divide {heads} attention heads"
    kv = arch.num_query_groups or heads
    if arch.mla is None and kv % tp and tp % kv:
        return f"neither divides nor is a multiple of the {kv} key-value heads"
    return None


def server_tp(arch: MegatronArch, hw: HardwareConfig, requested: int | None) -> int:
    """The TP of an eval stage's own SGLang server: `requested` when set; else the rollout engines'
    `gpus_per_engine` when its shard fits, else the smallest TP within a node that divides the heads
    and fits, else the largest such TP (nothing fits: the pre-flight warns)."""
    if requested is not None:
        return requested
    node = hw.node_gpus or hw.gpus_per_node
    # a TP divides the heads: counted up to them, not to the node (`gpus_per_node=10**12` took hours)
    valid = [
        v for v in range(1, min(node, arch.num_attention_heads) + 1) if sglang_tp_problem(arch, v) is None
    ]
    if hw.gpu_memory_gib is None or not valid:
        return hw.gpus_per_engine
    room = hw.gpu_memory_gib * hw.sglang_mem_fraction * WEIGHTS_SHARE
    fitting = [v for v in valid if engine_gib(arch, v) <= room]
    if hw.gpus_per_engine in fitting:
        return hw.gpus_per_engine
    return fitting[0] if fitting else valid[-1]


def data_parallel(extra_args: Sequence[str]) -> int:
    """The data-parallel replicas an SGLang server's pass-through flags ask for (`--dp-size N`, `--dp N`,
    or their `=N` forms); 1 when none. Each replica holds `tp` GPUs; with `--enable-dp-attention` the
    N attention groups share the server's tp GPUs (SGLang's attention data parallelism)."""
    if "--enable-dp-attention" in extra_args:
        return 1
    for index, token in enumerate(extra_args):
        flag, eq, inline = token.partition("=")
        if flag in ("--dp-size", "--dp", "--data-parallel-size"):
            value = inline if eq else (extra_args[index + 1] if index + 1 < len(extra_args) else "")
            return int(value) if value.isdigit() and int(value) > 0 else 1
    return 1
