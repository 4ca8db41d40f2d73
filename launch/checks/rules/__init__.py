"""Cross-field rules, one function each, grouped by what they look at. `RULES` runs in this order."""

from launch.checks import probes
from launch.checks.rules import (
    batch,
    components,
    context_flags,
    contracts,
    credentials,
    credit,
    data_sizes,
    distinct,
    engine_models,
    env_data,
    eval_load,
    eval_prompts,
    eval_server,
    hub_ids,
    imports,
    kernels,
    kinds,
    lengths,
    local_dirs,
    logprobs,
    megatron,
    model,
    one_truth,
    prompt_lengths,
    resources,
    seeds,
    service_gpus,
    sglang,
    splits,
    stages,
    topology,
    tracking,
    usual,
    values,
    weights,
)

RULES = (
    *credentials.RULES,
    # first: a premise the rest reasons from (the checkpoint's architecture, an SFT stage's data) is
    # fixed before the rules about its details
    *hub_ids.RULES,
    *env_data.RULES,
    *topology.RULES,
    *batch.RULES,
    *resources.RULES,
    *model.RULES,
    *contracts.RULES,
    *credit.RULES,
    *logprobs.RULES,
    *values.RULES,
    *stages.RULES,
    *imports.RULES,
    *one_truth.RULES,
    *splits.RULES,
    *data_sizes.RULES,
    *kernels.RULES,
    *probes.RULES,
    *local_dirs.RULES,
    *kinds.RULES,
    *components.RULES,
    *tracking.RULES,
    *lengths.RULES,
    *prompt_lengths.RULES,
    *eval_server.RULES,
    *service_gpus.RULES,
    *megatron.RULES,
    *sglang.RULES,
    *seeds.RULES,
    *context_flags.RULES,
    *usual.RULES,
    *weights.RULES,
    *eval_load.RULES,
    *eval_prompts.RULES,
    *distinct.RULES,
    *engine_models.RULES,
)

# The per-scope checks a candidate layout must pass (the memory fit is tried by the search itself).
SCOPE_RULES = tuple(
    rule.check  # type: ignore[attr-defined]
    for rule in (*topology.RULES, *batch.RULES, resources.layout_fits_nodes)
    if hasattr(rule, "check")
)
