"""Cross-field rules, one function each, grouped by what they look at. `RULES` runs in this order."""

import importlib
from collections.abc import Callable, Iterator

from launch.checks import probes
from launch.checks.context import Context, Rule
from launch.checks.rules import (
    adam,
    batch,
    budgets,
    components,
    context_flags,
    contracts,
    credentials,
    credit,
    data_sizes,
    distinct,
    env_data,
    eval_load,
    eval_prompts,
    eval_server,
    hub_ids,
    imports,
    job_env,
    kernels,
    kinds,
    lengths,
    local_dirs,
    logprobs,
    megatron,
    model,
    model_inputs,
    one_truth,
    prompt_lengths,
    resources,
    rewards,
    seeds,
    served_context,
    service_gpus,
    sglang,
    splits,
    stages,
    topology,
    tracking,
    unread,
    usual,
    values,
    weights,
)
from launch.config.errors import Problem
from t3rl_core.config import EnvConfig


def _only_when(module: str, applies: Callable[[Context], bool]) -> Rule:
    """The rules of `launch.checks.rules.<module>`, imported only for a config they may judge (`applies`),
    so a cold validate and plan of the others import none of them."""

    def only_when(ctx: Context) -> Iterator[Problem]:
        if applies(ctx):
            for rule in importlib.import_module(f"launch.checks.rules.{module}").RULES:
                yield from rule(ctx)

    only_when.__name__ = module
    return only_when


def _on_a_cluster(module: str) -> Rule:
    """The rules of `launch.checks.rules.<module>`, imported only for a config whose jobs run on a
    cluster (executor slurm or ray): a local run's cold validate and plan import none of them."""

    def on_a_cluster(ctx: Context) -> Iterator[Problem]:
        if ctx.run.executor.kind not in ("slurm", "ray"):
            return
        for rule in importlib.import_module(f"launch.checks.rules.{module}").RULES:
            yield from rule(ctx)

    on_a_cluster.__name__ = module
    return on_a_cluster


def _named_by_another_file(ctx: Context) -> bool:
    """Whether a config file other than a group's option file wrote a top-level section's name."""
    for group, section in ctx.data.items():
        named = isinstance(section, dict) and isinstance(section.get("name"), str)
        origin = ctx.provenance.origin(f"{group}.name") if named else None
        if (
            origin is not None
            and not origin.source.startswith("override")
            and f"/{group}/" not in origin.source
        ):
            return True
    return False


RULES = (
    *credentials.RULES,
    # a section's name a config file writes that is not its option's (imported only for such a file)
    _only_when("renamed_in_files", _named_by_another_file),
    # a selection `${oc.select:KEY}` names a key (imported only for a config that writes one)
    _only_when("selections", lambda ctx: any("oc.select" in str(o.raw) for _, o in ctx.provenance.items())),
    # first: a premise the rest reasons from (the checkpoint's architecture, an SFT stage's data) is
    # fixed before the rules about its details
    *hub_ids.RULES,
    *model_inputs.RULES,
    *env_data.RULES,
    # an env whose own step limit declares what its tasks need (tau2's max_steps)
    _only_when(
        "env_steps", lambda ctx: type(ctx.run.env).episode_steps_needed is not EnvConfig.episode_steps_needed
    ),
    *topology.RULES,
    *batch.RULES,
    *batch.NAME_RULES,
    *resources.RULES,
    *model.RULES,
    *contracts.RULES,
    *credit.RULES,
    *logprobs.RULES,
    *values.RULES,
    *stages.RULES,
    *imports.RULES,
    *one_truth.RULES,
    *job_env.RULES,
    _only_when("job_env_paths", lambda ctx: any(s.hardware.env_vars for s in ctx.scopes)),
    # a job variable named like one its reader reads, in other letters
    _only_when("env_names", lambda ctx: any(s.hardware.env_vars for s in ctx.scopes)),
    # a root hardware key typed on the command line of a run that trains nothing
    _only_when(
        "untrained_hardware",
        lambda ctx: (
            all(s.stage is None for s in ctx.scopes)
            and any(
                k.startswith("hardware.") and o.source.startswith("override")
                for k, o in ctx.provenance.items()
            )
        ),
    ),
    *splits.RULES,
    *data_sizes.RULES,
    *kernels.RULES,
    *probes.RULES,
    *local_dirs.RULES,
    *kinds.RULES,
    _on_a_cluster("cluster_references"),
    # the cluster's address exported here when the key leaves it unset, read by the key's kind
    _only_when(
        "ray_address", lambda ctx: ctx.run.executor.kind == "ray" and ctx.run.executor.address is None
    ),
    _on_a_cluster("ray_upload"),
    *components.RULES,
    *tracking.RULES,
    _only_when("tracking_env", lambda ctx: ctx.run.tracking.kind == "wandb"),
    *lengths.RULES,
    *prompt_lengths.RULES,
    *eval_server.RULES,
    *service_gpus.RULES,
    *megatron.RULES,
    *sglang.RULES,
    *seeds.RULES,
    *served_context.RULES,
    *context_flags.RULES,
    _only_when(  # an id slime stops at, passed through: imported only when one is
        "stop_token_ids",
        lambda ctx: any(
            a.startswith("--rollout-stop-token-ids") for a in ctx.run.model.architecture.extra_args
        ),
    ),
    _only_when(  # what an env's prepare_data would refuse: imported only when one runs and would
        "prepare_refusals",
        lambda ctx: (
            any(getattr(s, "kind", None) == "prepare_data" for s in ctx.run.stages.values())
            and bool(ctx.run.env.prepare_refusals())
        ),
    ),
    *usual.RULES,
    _on_a_cluster("slurm_time"),
    _on_a_cluster("job_waits"),
    _on_a_cluster("slurm_job"),
    _on_a_cluster("sbatch_control"),
    *weights.RULES,
    *eval_load.RULES,
    *eval_prompts.RULES,
    *distinct.RULES,
    *unread.RULES,
    *budgets.RULES,
    *adam.RULES,
    *rewards.RULES,
)

# The per-scope checks a candidate layout must pass (the memory fit is tried by the search itself).
SCOPE_RULES = tuple(
    rule.check  # type: ignore[attr-defined]
    # the layout's own rules, which a fix proposing a layout value must pass (expert TP on a dense model too)
    # and a uniform recompute's chunk against the pipeline blocks a proposed PP leaves
    for rule in (
        *topology.RULES,
        *batch.RULES,
        resources.layout_fits_nodes,
        values.expert_tp_needs_experts,
        megatron.uniform_chunks_fit_each_block,
    )
    if hasattr(rule, "check")
)
