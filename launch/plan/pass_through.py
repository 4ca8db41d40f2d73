"""Pass-through argv (`model.architecture.extra_args`) against the argv t3rl derives from the config.

slime parses with argparse, which keeps the last of a repeated flag without a word: an `--lr` in
extra_args silently replaces (or is replaced by) the `--lr` t3rl writes from the curriculum, and the
config then no longer says what runs. A pass-through flag that t3rl derives is refused, naming the key
t3rl derives it from; the fix moves the value there.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.errors import ConfigError, Problem
from launch.config.fixes import list_override
from launch.plan.slime_options import argv_flags

# Derived flags whose config field is not the flag's own name (`--lr` ← optimizer.lr is found by name).
_HARDWARE = {
    "--tensor-model-parallel-size": "tensor_parallel",
    "--pipeline-model-parallel-size": "pipeline_parallel",
    "--context-parallel-size": "context_parallel",
    "--expert-model-parallel-size": "expert_parallel",
    "--expert-tensor-parallel-size": "expert_tensor_parallel",
    "--actor-num-nodes": "nodes",
    "--actor-num-gpus-per-node": "gpus_per_node",
    "--rollout-num-gpus": "rollout_gpus",
    "--rollout-num-gpus-per-engine": "gpus_per_engine",
    "--sglang-mem-fraction-static": "sglang_mem_fraction",
    "--sglang-attention-backend": "sglang_attention_backend",
    "--sglang-chunked-prefill-size": "sglang_chunked_prefill_size",
    "--use-dynamic-batch-size": "dynamic_batch",
    "--max-tokens-per-gpu": "max_tokens_per_gpu",
    "--log-probs-chunk-size": "log_probs_chunk_size",
    "--attention-backend": "attention_backend",
    "--sequence-parallel": "sequence_parallel",
}
_CURRICULUM = {
    "--optimizer": "optimizer.name",
    "--dynamic-sampling-filter-path": "dynamic_sampling_filter",
    "--prompt-data": "train_split",
}
_CURRICULUM_SECTIONS = ("", "optimizer.", "algorithm.")
_CURRICULUM_FIELDS = {
    "": (
        "num_rollout num_epoch rollout_batch_size n_samples_per_prompt global_batch_size "
        "num_steps_per_rollout over_sampling_batch_size rollout_shuffle balance_data "
        "rollout_max_response_len eval_max_response_len rollout_temperature rollout_top_p "
        "n_samples_per_eval_prompt save_interval eval_interval"
    ),
    "optimizer.": "lr lr_decay_style lr_warmup_fraction weight_decay adam_beta1 adam_beta2 clip_grad",
    "algorithm.": (
        "advantage_estimator use_kl_loss kl_loss_coef kl_loss_type entropy_coef eps_clip eps_clip_high "
        "eps_clip_c use_tis"
    ),
}


def owner(flag: str, stage_key: str) -> str | None:
    """The config key t3rl derives `flag` from in train stage `stage_key`, when one does."""
    if flag in _HARDWARE:
        return f"hardware.{_HARDWARE[flag]}"
    if flag in _CURRICULUM:
        return f"{stage_key}.curriculum.{_CURRICULUM[flag]}"
    if flag in ("--seed", "--rollout-seed"):
        return "seed"
    name = flag.removeprefix("--").replace("-", "_")
    for section in _CURRICULUM_SECTIONS:
        if name in _CURRICULUM_FIELDS[section].split():
            return f"{stage_key}.curriculum.{section}{name}"
    return None


def check_pass_through(derived: Sequence[str], extra: Sequence[str], key: str, stage_key: str) -> None:
    """Raise a ConfigError for every flag of `extra` (config key `key`) that `derived` already sets."""
    made = {flag: values for _, flag, values in argv_flags(derived)}
    problems = []
    for index, flag, values in argv_flags(extra):
        if flag not in made:
            continue
        end = index + (1 if "=" in extra[index] else 1 + len(values))
        rest = [*extra[:index], *extra[end:]]
        field = owner(flag, stage_key)
        theirs = " ".join([flag, *values])
        ours = " ".join([flag, *made[flag]])
        moved = f" {field}={values[0]}" if field and len(values) == 1 else ""
        source = f"from {field}" if field else "itself"
        problems.append(
            Problem(
                key,
                f"'{theirs}' passes through a flag t3rl derives {source} ('{ours}'): argparse would keep "
                "only the last of the two",
                fix=f"set {list_override(key, rest)}{moved}"
                + ("" if moved or not field else f" (then set {field})"),
            )
        )
    if problems:
        raise ConfigError(problems)


def check_groups(groups: dict[str, list[str]], extra: Sequence[str], stage_key: str) -> None:
    """`check_pass_through` of a train job's argv groups, whose model group ends with `extra`."""
    model = groups["model"]
    derived = [
        token
        for name, group in groups.items()
        for token in (group[: len(group) - len(extra)] if name == "model" else group)
    ]
    assert list(model[len(model) - len(extra) :]) == list(extra), "the model group ends with extra_args"
    check_pass_through(derived, extra, "model.architecture.extra_args", stage_key)
