"""The slime command of one train stage: config in, tokens out (pure: no I/O, no clock, no environment).

The argv follows T3RL's group order (t3rl notes §2.2): launcher, MODEL, CKPT, ROLLOUT, OPTIMIZER,
GRPO, TENSORBOARD/WANDB, PERF, EVAL, SGLANG, MISC, CUSTOM. Every optional value is emitted as a
complete flag/value pair or not at all, and the finished argv is checked against slime's real option
set (`launch.plan.slime_options`), so nothing reaches slime that it would silently ignore.

Deliberate differences from T3RL's stage-1 script (each needed by the pipeline, none changes training):
- `--load <save dir>` always: empty on the first launch, so slime starts from `--ref-load` with a
  fresh optimizer; after a crash the same command resumes from the last checkpoint.
- `--seed` / `--rollout-seed` = `run.seed`, so the seed in the manifest is the one slime used.
- The in-loop eval dataset is named after its split (metrics land under `eval/<split>/…`).

SFT mode (`curriculum.mode: sft`, slime notes §8.3) runs `train_async.py` with slime's own
`sft_rollout` and no SGLang. It reads t3rl's JSONL rows as they are: `--input-key prompt` holds the
whole conversation to imitate (system, user, assistant and tool turns) and `metadata.tools` its tools;
slime masks in the assistant turns with the family's `--loss-mask-type`.

No `--custom-rm-path`: the generate hook stores the reward on the sample, and slime calls a reward
model only for samples without one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from launch.config.algorithms import SFT_LOSS_MASK
from launch.config.env_references import job_variable
from launch.config.errors import ConfigError, Problem
from launch.config.overlay import overlay
from launch.config.schema import (
    CurriculumConfig,
    HardwareConfig,
    MegatronArch,
    RunConfig,
    TrackingConfig,
    TrainStage,
)
from launch.plan.pass_through import check_groups
from launch.plan.secret_uploads import with_upload_excludes
from launch.plan.slime_constraints import check_constraints
from launch.plan.slime_options import check_argv
from launch.plan.tracking import slime_tracking_args, tracking_env, tracking_names
from t3rl_core.records import Record

# The t3rl_core functions slime loads by dotted path (slime's load_function wants `pkg.module.attr`).
HOOKS = {
    "generate": "t3rl_core.hooks.slime.generate",
    "rollout_log": "t3rl_core.hooks.slime.log_rollout_data",
    "eval_rollout_log": "t3rl_core.hooks.slime.log_eval_rollout_data",
    "eval": "t3rl_core.hooks.slime.eval_rollout_with_metrics",
    "tis": "t3rl_core.hooks.mis.compute_mis_weights_with_cp",
    "advantage": "t3rl_core.hooks.advantage.kl_in_reward_grpo",
    "turn_rewards": "t3rl_core.hooks.advantage.turn_level_rewards",
    "turn_advantage": "t3rl_core.hooks.advantage.turn_level_advantages",
}
HOOK_FLAGS = {
    "--custom-generate-function-path": "generate",
    "--custom-rollout-log-function-path": "rollout_log",
    "--custom-eval-rollout-log-function-path": "eval_rollout_log",
    "--eval-function-path": "eval",
    "--custom-tis-function-path": "tis",
    "--custom-advantage-function-path": "advantage",
}
SFT_ROLLOUT = "slime.rollout.sft_rollout.generate_rollout"


class TrainPaths(Record):
    """Every path a train stage's command names, resolved by the plan."""

    hf_checkpoint: str
    ref_load: str
    save: str
    prompt_data: str
    eval_prompt_data: str | None
    runtime_config: str
    stage_dir: str
    slime_root: str
    megatron_root: str
    # The directory holding the t3rl_core package, so the hooks import inside Ray workers.
    t3rl_root: str
    python: str = "python3"


class SlimeJob(Record):
    """What a train stage submits: slime's entry point with its argv, and the Ray runtime env."""

    script: str
    argv: tuple[str, ...]
    env_vars: Mapping[str, str]
    # Ray dashboard address; None = `ray job submit` reads RAY_ADDRESS itself.
    address: str | None
    python: str = "python3"
    # GPUs the Ray cluster must offer (training + separate rollout GPUs).
    gpus: int = 0
    nodes: int = 1
    groups: Mapping[str, tuple[str, ...]] = {}
    # Plugin package directories Ray uploads for the job (runtime_env py_modules).
    py_modules: tuple[str, ...] = ()

    @property
    def entrypoint(self) -> list[str]:
        return [self.python, self.script, *self.argv]

    def runtime_env(self) -> dict[str, Any]:
        """Ray's runtime_env of the job: environment variables, and the plugin code it must carry
        (without the files credentials are kept in)."""
        modules = {"py_modules": list(self.py_modules)} if self.py_modules else {}
        return with_upload_excludes({"env_vars": dict(self.env_vars), **modules})

    def runtime_env_json(self) -> str:
        return json.dumps(self.runtime_env())

    def submit_argv(self) -> list[str]:
        """`ray job submit … -- python3 train.py <argv>` as argv tokens."""
        address = [f"--address={self.address}"] if self.address else []
        return [
            "ray",
            "job",
            "submit",
            *address,
            f"--runtime-env-json={self.runtime_env_json()}",
            "--",
            *self.entrypoint,
        ]


def num(value: float | int) -> str:
    """A number as slime's parsers read it (floats keep Python's shortest round-trip form)."""
    return str(value) if isinstance(value, int) else repr(float(value))


def integer(value: float | int, key: str) -> str:
    if float(value) != int(value):
        raise ConfigError([Problem(key, f"{value} must be a whole number (Megatron parses it as int)")])
    return str(int(value))


def merge_hardware(base: HardwareConfig, overrides: Mapping[str, Any], key: str) -> HardwareConfig:
    """The stage's topology: `base` with the stage's overrides merged in (nested sections key by key)."""
    if not overrides:
        return base
    merged = overlay(base.model_dump(), overrides)
    try:
        return HardwareConfig.model_validate(merged)
    except ValueError as err:
        raise ConfigError(
            [Problem(key, f"invalid hardware override: {err}", fix="see conf/hardware/*.yaml")]
        ) from err


def _opt(flag: str, value: Any) -> list[str]:
    """`[flag, value]`, or nothing when the value is None or empty (never a dangling flag)."""
    if value is None or value == "":
        return []
    return [flag, value if isinstance(value, str) else num(value)]


def _switch(flag: str, on: bool) -> list[str]:
    return [flag] if on else []


# --------------------------------------------------------------------------------------------- groups


def launcher_args(hw: HardwareConfig, sft: bool) -> list[str]:
    args = ["--actor-num-nodes", str(hw.nodes), "--actor-num-gpus-per-node", str(hw.gpus_per_node)]
    if sft:
        return args
    rollout_gpus = hw.world_size if hw.colocate else hw.rollout_gpus
    args += _opt("--rollout-num-gpus", rollout_gpus) + _switch("--colocate", hw.colocate)
    if hw.gpus_per_node != 8:
        # slime places engines assuming 8 GPUs per node unless told otherwise (slime notes §1.5).
        args += ["--num-gpus-per-node", str(hw.gpus_per_node)]
    return args


def model_args(arch: MegatronArch, key: str = "model.architecture") -> list[str]:
    """Megatron's architecture flags, in the order of slime's scripts/models/*.sh."""
    args = _switch("--swiglu", arch.swiglu)
    args += ["--num-layers", str(arch.num_layers), "--hidden-size", str(arch.hidden_size)]
    args += [
        "--ffn-hidden-size",
        str(arch.ffn_hidden_size),
        "--num-attention-heads",
        str(arch.num_attention_heads),
    ]
    if arch.num_query_groups is not None:
        args += ["--group-query-attention", "--num-query-groups", str(arch.num_query_groups)]
    if arch.mla is None:
        args += ["--use-rotary-position-embeddings"]
    else:
        args += ["--position-embedding-type", "rope"]
    args += _switch("--disable-bias-linear", arch.disable_bias_linear)
    args += _switch("--add-qkv-bias", arch.add_qkv_bias)
    args += ["--normalization", arch.normalization, "--norm-epsilon", num(arch.norm_epsilon)]
    args += ["--rotary-base", integer(arch.rotary_base, f"{key}.rotary_base")]
    args += ["--vocab-size", str(arch.vocab_size)]
    args += _opt("--kv-channels", arch.kv_channels)
    args += _switch("--qk-layernorm", arch.qk_layernorm)
    args += _switch("--untie-embeddings-and-output-weights", arch.untie_embeddings_and_output_weights)
    if arch.mla is not None:
        mla = arch.mla
        args += ["--multi-latent-attention", *_opt("--q-lora-rank", mla.q_lora_rank)]
        args += ["--kv-lora-rank", str(mla.kv_lora_rank), "--qk-head-dim", str(mla.qk_head_dim)]
        args += ["--qk-pos-emb-head-dim", str(mla.qk_pos_emb_head_dim), "--v-head-dim", str(mla.v_head_dim)]
    if arch.moe is not None:
        moe = arch.moe
        freq = moe.moe_layer_freq
        args += ["--num-experts", str(moe.num_experts), "--moe-ffn-hidden-size", str(moe.moe_ffn_hidden_size)]
        args += ["--moe-router-topk", str(moe.moe_router_topk)]
        args += _opt("--moe-shared-expert-intermediate-size", moe.moe_shared_expert_intermediate_size)
        # A per-layer list is one token without spaces, e.g. "[0,1,1]": Megatron's moe_freq_type
        # accepts only the characters ,0-9[]()+* (slime's deepseek-v3.sh writes it so too).
        args += [
            "--moe-layer-freq",
            str(freq) if isinstance(freq, int) else "[" + ",".join(map(str, freq)) + "]",
        ]
    return args + list(arch.extra_args)


def ckpt_args(paths: TrainPaths, cur: CurriculumConfig) -> list[str]:
    return [
        "--hf-checkpoint", paths.hf_checkpoint,
        "--ref-load", paths.ref_load,
        "--load", paths.save,
        "--save", paths.save,
        *_opt("--save-interval", cur.save_interval),
    ]  # fmt: skip


def rollout_args(paths: TrainPaths, cur: CurriculumConfig, seed: int) -> list[str]:
    args = ["--prompt-data", paths.prompt_data, "--input-key", "prompt", "--metadata-key", "metadata"]
    args += _switch("--rollout-shuffle", cur.rollout_shuffle)
    args += _opt("--num-rollout", cur.num_rollout) + _opt("--num-epoch", cur.num_epoch)
    args += ["--rollout-batch-size", str(cur.rollout_batch_size)]
    args += ["--n-samples-per-prompt", str(cur.n_samples_per_prompt)]
    args += ["--rollout-max-response-len", str(cur.rollout_max_response_len)]
    args += ["--rollout-temperature", num(cur.rollout_temperature)]
    if cur.rollout_top_p != 1.0:
        args += ["--rollout-top-p", num(cur.rollout_top_p)]
    args += _opt("--global-batch-size", cur.global_batch_size)
    args += _opt("--num-steps-per-rollout", cur.num_steps_per_rollout)
    args += _opt("--over-sampling-batch-size", cur.over_sampling_batch_size)
    args += _opt("--dynamic-sampling-filter-path", cur.dynamic_sampling_filter)
    args += _switch("--balance-data", cur.balance_data)
    return [*args, "--rollout-seed", str(seed)]


def sft_args(paths: TrainPaths, cur: CurriculumConfig, family: str, key: str) -> list[str]:
    mask = SFT_LOSS_MASK.get(family)
    if mask is None:  # refused before the plan by rules/model.py (sft_family_has_a_loss_mask)
        raise ConfigError(
            [
                Problem(
                    key,
                    f"slime's SFT loss masks know the chat families {sorted(SFT_LOSS_MASK)}, not '{family}'",
                    fix=f"set {key}=rl",
                )
            ]
        )
    args = ["--rollout-function-path", SFT_ROLLOUT, "--prompt-data", paths.prompt_data]
    args += ["--input-key", "prompt", "--metadata-key", "metadata"]
    args += _switch("--rollout-shuffle", cur.rollout_shuffle)
    args += _opt("--num-rollout", cur.num_rollout) + _opt("--num-epoch", cur.num_epoch)
    args += ["--rollout-batch-size", str(cur.rollout_batch_size)]
    args += _opt("--global-batch-size", cur.global_batch_size)
    args += _opt("--num-steps-per-rollout", cur.num_steps_per_rollout)
    args += ["--loss-type", "sft_loss", "--loss-mask-type", mask, "--calculate-per-token-loss"]
    return [*args, "--disable-compute-advantages-and-returns", "--debug-train-only"]


def optimizer_args(cur: CurriculumConfig) -> list[str]:
    opt = cur.optimizer
    args = ["--optimizer", opt.name, "--lr", num(opt.lr), "--lr-decay-style", opt.lr_decay_style]
    args += _opt("--lr-warmup-fraction", opt.lr_warmup_fraction)
    args += ["--weight-decay", num(opt.weight_decay)]
    if opt.name == "adam":
        args += ["--adam-beta1", num(opt.adam_beta1), "--adam-beta2", num(opt.adam_beta2)]
    return [*args, "--clip-grad", num(opt.clip_grad)]


def grpo_args(cur: CurriculumConfig) -> list[str]:
    algo = cur.algorithm
    args = ["--advantage-estimator", algo.advantage_estimator]
    if algo.use_kl_loss:
        args += [
            "--use-kl-loss",
            "--kl-loss-coef",
            num(algo.kl_loss_coef),
            "--kl-loss-type",
            algo.kl_loss_type,
        ]
    args += ["--entropy-coef", num(algo.entropy_coef), "--eps-clip", num(algo.eps_clip)]
    args += _opt("--eps-clip-high", algo.eps_clip_high) + _opt("--eps-clip-c", algo.eps_clip_c)
    args += _switch("--use-tis", algo.use_tis) + _switch("--get-mismatch-metrics", algo.mismatch_metrics)
    if algo.use_tis or algo.mismatch_metrics:
        args += ["--custom-tis-function-path", HOOKS["tis"]]
    if algo.kl_in_reward is not None:
        # --kl-coef makes slime load the reference and compute both log-probs before the advantage
        # hook, which puts the penalty in the reward (slime's own GRPO returns ignore --kl-coef).
        args += ["--kl-coef", num(algo.kl_in_reward.coef)]
        args += ["--custom-advantage-function-path", HOOKS["advantage"]]
    if algo.credit == "turn":
        # MT-GRPO's advantages need the whole batch (the rollout side computes them, they reach the
        # training ranks as the per-sample rewards) and a hook that hands them to the loss.
        args += ["--custom-reward-post-process-path", HOOKS["turn_rewards"]]
        args += ["--custom-advantage-function-path", HOOKS["turn_advantage"]]
    return args


def check_advantage_hook(argv: list[str], cur: CurriculumConfig, extra_args: list[str]) -> None:
    """t3rl's advantage hook named through the model's extra_args without the curriculum's
    `algorithm.kl_in_reward`: the hook has no β, and without the `--kl-coef` that section plans slime
    loads no reference model (nor computes the actor's log-probs) before calling it."""
    if cur.algorithm.kl_in_reward is not None:
        return
    if _last_value(argv, "--custom-advantage-function-path") != HOOKS["advantage"]:
        return
    rest = _without_flag(extra_args, "--custom-advantage-function-path")
    raise ConfigError(
        [
            Problem(
                "model.architecture.extra_args",
                "names t3rl's advantage hook, but the train curriculum sets no algorithm.kl_in_reward: "
                "no KL coefficient, and no --kl-coef to load the reference model",
                fix=f"set model.architecture.extra_args=[{','.join(rest)}] (then set the curriculum's "
                "algorithm.kl_in_reward={coef:0.001,type:kl}: the plan adds the hook)",
            )
        ]
    )


def _last_value(argv: list[str], flag: str) -> str | None:
    """The value argparse keeps for a one-value `flag` (the last one, `--flag v` or `--flag=v`)."""
    values = [argv[i + 1] for i, token in enumerate(argv[:-1]) if token == flag]
    values += [token.partition("=")[2] for token in argv if token.startswith(f"{flag}=")]
    return values[-1] if values else None


def _without_flag(argv: list[str], flag: str) -> list[str]:
    """`argv` minus a one-value `flag` and its value."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == flag:
            skip = True
        elif not token.startswith(f"{flag}="):
            out.append(token)
    return out


def tracking_args(
    tracking: TrackingConfig, experiment: str, run_id: str, stage_dir: str, environ: Mapping[str, str]
) -> list[str]:
    names = tracking_names(tracking, experiment=experiment, run_id=run_id)
    return slime_tracking_args(tracking, names, stage_dir, environ)


def perf_args(hw: HardwareConfig) -> list[str]:
    args = ["--tensor-model-parallel-size", str(hw.tensor_parallel)]
    args += _switch("--sequence-parallel", hw.sequence_parallel)
    args += ["--pipeline-model-parallel-size", str(hw.pipeline_parallel)]
    args += ["--context-parallel-size", str(hw.context_parallel)]
    args += ["--expert-model-parallel-size", str(hw.expert_parallel)]
    args += ["--expert-tensor-parallel-size", str(hw.expert_tensor_parallel)]
    if hw.recompute is not None:
        args += ["--recompute-granularity", hw.recompute.granularity]
        if hw.recompute.granularity == "full":
            args += [
                "--recompute-method",
                hw.recompute.method,
                "--recompute-num-layers",
                str(hw.recompute.num_layers),
            ]
    args += _switch("--use-dynamic-batch-size", hw.dynamic_batch)
    args += _opt("--max-tokens-per-gpu", hw.max_tokens_per_gpu)
    args += _opt("--log-probs-chunk-size", hw.log_probs_chunk_size)
    return args + _switch("--recompute-loss-function", hw.recompute_loss_function)


def eval_args(paths: TrainPaths, cur: CurriculumConfig) -> list[str]:
    if cur.eval_interval is None or paths.eval_prompt_data is None or cur.eval_split is None:
        return []
    return [
        "--eval-interval", str(cur.eval_interval),
        "--eval-prompt-data", cur.eval_split, paths.eval_prompt_data,
        "--n-samples-per-eval-prompt", str(cur.n_samples_per_eval_prompt),
        *_opt("--eval-max-response-len", cur.eval_max_response_len),
    ]  # fmt: skip


def sglang_args(hw: HardwareConfig) -> list[str]:
    args = ["--rollout-num-gpus-per-engine", str(hw.gpus_per_engine)]
    args += ["--sglang-mem-fraction-static", num(hw.sglang_mem_fraction)]
    args += _opt("--sglang-attention-backend", hw.sglang_attention_backend)
    return args + _opt("--sglang-chunked-prefill-size", hw.sglang_chunked_prefill_size)


def misc_args(hw: HardwareConfig, seed: int) -> list[str]:
    args = ["--attention-dropout", "0.0", "--hidden-dropout", "0.0", "--accumulate-allreduce-grads-in-fp32"]
    args += ["--attention-softmax-in-fp32", *_opt("--attention-backend", hw.attention_backend)]
    return [*args, "--seed", str(seed)]


def custom_args(paths: TrainPaths, reward: object) -> list[str]:
    """The t3rl hooks; a reward shape that replaces slime's group normalisation (tau2's curriculum
    weights, rejection sampling) names its post-process hook on its config class."""
    post_process = getattr(type(reward), "slime_reward_post_process", None)
    return [
        "--custom-generate-function-path", HOOKS["generate"],
        "--custom-rollout-log-function-path", HOOKS["rollout_log"],
        "--custom-eval-rollout-log-function-path", HOOKS["eval_rollout_log"],
        "--eval-function-path", HOOKS["eval"],
        *_opt("--custom-reward-post-process-path", post_process),
        "--custom-config-path", paths.runtime_config,
        "--dump-details", f"{paths.stage_dir}/rollouts",
    ]  # fmt: skip


# -------------------------------------------------------------------------------------------- the job


def job_env(
    run: RunConfig, hw: HardwareConfig, paths: TrainPaths, sft: bool, environ: Mapping[str, str]
) -> dict[str, str]:
    """The Ray runtime env: import paths, Megatron's required CUDA setting, tracking, hardware.env_vars."""
    env = {"PYTHONPATH": ":".join(p for p in (paths.megatron_root, paths.t3rl_root, paths.slime_root) if p)}
    if hw.tensor_parallel > 1 or hw.context_parallel > 1:
        env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
    if sft:
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    env.update(tracking_env(run.tracking, paths.stage_dir, environ))
    if run.tracking.kind == "wandb" and environ.get("WANDB_API_KEY"):
        # A reference Ray expands on the worker from its own environment: the key never enters a file.
        env["WANDB_API_KEY"] = "${WANDB_API_KEY}"
    # Credentials go by reference too, so that no command or file holds their value.
    env.update({k: job_variable(k, v, environ) for k, v in hw.env_vars.items()})
    return env


def build_train_job(
    run: RunConfig,
    stage_name: str,
    stage: TrainStage,
    paths: TrainPaths,
    *,
    address: str | None,
    run_id: str,
    environ: Mapping[str, str],
) -> SlimeJob:
    """The checked slime job of train stage `stage_name` (ConfigError on anything slime would not take)."""
    key = f"stages.{stage_name}"
    hw = merge_hardware(run.hardware, stage.hardware, f"{key}.hardware")
    cur = stage.curriculum
    sft = cur.mode == "sft"
    tracking = tracking_args(run.tracking, run.name, run_id, paths.stage_dir, environ)
    groups: dict[str, list[str]] = {
        "launcher": launcher_args(hw, sft),
        "model": model_args(run.model.architecture),
    }
    groups["ckpt"] = ckpt_args(paths, cur)
    if sft:
        groups["sft"] = sft_args(paths, cur, run.model.family, f"{key}.curriculum.mode")
        groups["optimizer"] = optimizer_args(cur)
        groups["tracking"] = tracking
        groups["perf"] = perf_args(hw)
        groups["misc"] = misc_args(hw, run.seed)
    else:
        groups["rollout"] = rollout_args(paths, cur, run.seed)
        groups["optimizer"] = optimizer_args(cur)
        groups["grpo"] = grpo_args(cur)
        groups["tracking"] = tracking
        groups["perf"] = perf_args(hw)
        groups["eval"] = eval_args(paths, cur)
        groups["sglang"] = sglang_args(hw)
        groups["misc"] = misc_args(hw, run.seed)
        groups["custom"] = custom_args(paths, run.reward)
    argv = [token for group in groups.values() for token in group]
    check_groups(groups, run.model.architecture.extra_args, key)
    check_argv(
        argv, key=key, extra=run.model.architecture.extra_args, extra_key="model.architecture.extra_args"
    )
    check_constraints(
        argv, run.model.architecture.extra_args, key=key, extra_key="model.architecture.extra_args"
    )
    check_advantage_hook(argv, cur, run.model.architecture.extra_args)
    script = "train.py" if hw.colocate and not sft else "train_async.py"
    rollout_gpus = 0 if (sft or hw.colocate) else (hw.rollout_gpus or 0)
    return SlimeJob(
        script=f"{paths.slime_root}/{script}",
        argv=tuple(argv),
        env_vars=job_env(run, hw, paths, sft, environ),
        address=address,
        python=paths.python,
        gpus=hw.world_size + rollout_gpus,
        nodes=hw.nodes,
        groups={name: tuple(tokens) for name, tokens in groups.items()},
    )
