"""Which config key t3rl writes each slime flag from: one table, read where a pass-through flag repeats a
derived one (`launch.plan.pass_through`, `launch.plan.slime_constraints`) and where a key is typed by the
flag's own name (`stages.train.curriculum.use_dynamic_batch_size=true`, as a slime script spells
`--use-dynamic-batch-size`: `launch.config.misplaced_keys`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def owner_of_name(name: str, root: Mapping[str, Any], typed: str) -> str | None:
    """The key t3rl writes the slime flag spelt `name` (`use_dynamic_batch_size`) from, for the key
    `typed` under the composed config `root`; None when t3rl derives no flag of that name, or it is a
    curriculum's and no one train stage is meant."""
    flag = "--" + name.removeprefix("--").replace("_", "-")
    stage = _train_stage(root, typed)
    found = owner(flag, f"stages.{stage}" if stage else "")
    if found is None or found.startswith("."):
        return None
    overlay = f"stages.{stage}.hardware."
    # typed in a stage's hardware overlay: the stage's own value of the hardware key
    return found.replace("hardware.", overlay, 1) if typed.startswith(overlay) else found


def _train_stage(root: Mapping[str, Any], typed: str) -> str | None:
    """The train stage `typed` is under (`stages.<s>.…`), else the run's only one."""
    stages = root.get("stages")
    stages = stages if isinstance(stages, Mapping) else {}
    trains = [n for n, s in stages.items() if isinstance(s, Mapping) and s.get("kind") == "train"]
    parts = typed.split(".")
    if parts[0] == "stages" and len(parts) > 2 and parts[1] in trains:
        return parts[1]
    return trains[0] if len(trains) == 1 else None
