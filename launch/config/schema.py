"""The schema of a whole run: every config group as a pydantic model with unknown keys rejected.

Field names here are the contract between `conf/*.yaml`, the validators, the slime argv builder and
the stages. Cross-field rules live in `launch.checks.validate`, not here, so that each error can name the
file or override that set the offending key.

Annotations are evaluated as the classes are created (no `from __future__ import annotations`): as
strings, pydantic would compile each of them again (~3 ms of a cold `t3rl validate`).
"""

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationInfo, field_validator, model_validator

from launch.config.gpus import named_gpu
from launch.config.overlay import overlay
from t3rl_core.config import (
    AnyEnvConfig,
    AnyRewardConfig,
    ChatConfig,
    KlInRewardConfig,
    MisConfig,
    ParsersConfig,
    RuntimeConfig,
)
from t3rl_core.credit import OutcomeWeight
from t3rl_core.eval.config import MAX_SAMPLES_PER_TASK, EvalConfig
from t3rl_core.fields import (
    CALL_TOKENS,
    STARTUP_USUAL,
    WEIGHT_DECAY,
    Argv,
    AtLeast,
    ClusterPath,
    ContainerImage,
    ContainerMount,
    Delay,
    Distinct,
    DottedKey,
    EnvVarName,
    GpuId,
    HfHubId,
    HookPath,
    Identifier,
    Interpreter,
    Label,
    LearningRate,
    LocalPath,
    ModelDir,
    Name,
    NodeGpus,
    OffOrPositiveInt,
    OutputDir,
    PathComponent,
    Port,
    PositiveFloat,
    PositiveInt,
    RayAddress,
    ReadWhen,
    Repeats,
    Reread,
    SbatchOption,
    Seed,
    SharedOutputDir,
    ShellScript,
    SlurmDuration,
    SlurmPartitions,
    SplitName,
    StageName,
    StageRef,
    Temperature,
    Text,
    UploadDir,
    UrlPath,
    Usual,
    mount_destination,
    sbatch_option_name,
)
from t3rl_core.service_fields import ServiceFields
from t3rl_core.strict import StrictModel, empty_list

# ---------------------------------------------------------------------------------------------- model


class MoEArch(StrictModel):
    """Mixture-of-experts fields of the Megatron architecture."""

    num_experts: int = Field(ge=1)
    moe_ffn_hidden_size: int = Field(ge=1)
    moe_router_topk: int = Field(ge=1)
    moe_shared_expert_intermediate_size: int | None = Field(None, ge=1)
    # Megatron's --moe-layer-freq: 1 = every layer is MoE, or a 0/1 list, one entry per layer.
    moe_layer_freq: (
        Annotated[int, Field(ge=1)] | Annotated[list[Literal[0, 1]], Repeats("one entry per layer")]
    ) = 1


class MLAArch(StrictModel):
    """Multi-latent attention fields (DeepSeek-V3)."""

    q_lora_rank: int | None = Field(None, ge=1)
    kv_lora_rank: int = Field(ge=1)
    qk_head_dim: int = Field(ge=1)
    qk_pos_emb_head_dim: int = Field(ge=1)
    v_head_dim: int = Field(ge=1)


class MegatronArch(StrictModel):
    """The model architecture as Megatron flags (slime's MODEL_ARGS), checked against the HF config.json."""

    num_layers: int = Field(ge=1)
    hidden_size: int = Field(ge=1)
    ffn_hidden_size: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    # None = multi-head attention (no --group-query-attention).
    num_query_groups: int | None = Field(None, ge=1)
    kv_channels: int | None = Field(None, ge=1)
    vocab_size: int = Field(ge=1)
    normalization: Literal["RMSNorm", "LayerNorm"] = "RMSNorm"
    norm_epsilon: float = Field(gt=0)
    rotary_base: float = Field(gt=0)
    swiglu: bool = True
    disable_bias_linear: bool = True
    add_qkv_bias: bool = False
    qk_layernorm: bool = False
    untie_embeddings_and_output_weights: bool = False
    moe: MoEArch | None = None
    mla: MLAArch | None = None
    # Flags not modelled above, as argv tokens (e.g. ["--rotary-percent", "0.5"]); checked against
    # slime's and Megatron's option set at resolve time.
    extra_args: Argv = Field(default_factory=empty_list)


class ModelConfig(StrictModel):
    """A model family bundle: weights, architecture, chat format and SGLang parsers in one place."""

    # Short name, also the conversion output name (<checkpoints_dir>/<name>_torch_dist).
    name: PathComponent
    # Chat-template family shipped in t3rl_core/chat/templates (qwen3, qwen2_5, llama3, glm4, deepseek_v3).
    family: Name
    # Hugging Face hub id (documentation, and the default directory name under paths.models_dir).
    hf_id: HfHubId
    # Local HF directory with config.json, tokenizer and weights.
    hf_checkpoint: ModelDir
    # True: hf_checkpoint is built offline by t3rl (tiny random weights, a tokenizer trained on the
    # env's data, the family's chat template) by the prepare_model stage — for CPU runs and tests.
    synthetic: bool = False
    # Tokens the model attends over (HF config.json max_position_embeddings): a prompt with what it
    # generates must fit in it, or SGLang refuses the request. None = not declared (not checked).
    context_length: PositiveInt | None = None
    # Whether the checkpoint writes a reasoning block (its family's tags, e.g. <think>…</think>) before
    # its answers by itself, unasked: Qwen3-8B true (off with chat_template_kwargs enable_thinking:
    # false), an instruct model such as Qwen3-4B-Instruct-2507 false. A model that does needs a reasoning
    # parser; a forced one (qwen3-thinking, deepseek-r1) on a model that does not, and whose prompt asks
    # for no tags, makes every answer a format error. None = not declared (then the model option of
    # hf_id says).
    thinks: bool | None = None
    architecture: MegatronArch
    chat: ChatConfig
    parsers: ParsersConfig


# ------------------------------------------------------------------------------------------- hardware


_FULL_RECOMPUTE = ReadWhen("granularity", ("full",), "only a full recompute has a method and a layer count")


class RecomputeConfig(StrictModel):
    """Megatron activation recomputation."""

    granularity: Literal["full", "selective"] = "full"
    method: Annotated[Literal["uniform", "block"], _FULL_RECOMPUTE] = "uniform"
    num_layers: Annotated[int, _FULL_RECOMPUTE] = Field(1, ge=1)


# CPUs of one node: two 192-core sockets with two threads a core are 768; SLURM refuses a job asking
# for more than a node has only when it is submitted, after the stages before it ran.
NODE_CPUS = Usual(768, 64, "no server node has more than 768 CPUs (two 192-core sockets, two threads a core)")


# SGLang's share of a GPU for weights and KV cache; the rest holds its activations and CUDA graph buffers
# (SGLang sizes its own default as (memory - those) / memory, ~0.9 on an 80 GB GPU).
SGLANG_STATIC_MEMORY = Usual(
    0.95,
    0.8,
    "SGLang's activations and CUDA graph buffers live in the rest of the GPU, and colocated, what "
    "Megatron leaves resident: above 0.95 its first batch or graph capture runs out of memory",
)
_BUDGET = ReadWhen(
    "dynamic_batch", (True,), "slime packs micro-batches by token budget only under dynamic batching"
)


class HardwareConfig(StrictModel):
    """Cluster topology and parallel layout."""

    name: Name
    gpu_type: Name = "H200"
    # Memory of one GPU in GiB (H100 80, H200 141): the per-GPU memory-fit check of the parallel layout.
    # None = the check is skipped.
    gpu_memory_gib: float | None = Field(None, gt=0)
    # GPUs each node physically has (what `ray start --num-gpus` and sbatch may claim per node);
    # None = gpus_per_node, i.e. training uses whole nodes.
    node_gpus: NodeGpus | None = None
    nodes: int = Field(1, ge=1)
    gpus_per_node: NodeGpus = 8
    # True: SGLang and Megatron share the training GPUs (train.py);
    # False: SGLang gets `rollout_gpus` extra GPUs (train_async.py).
    colocate: bool = True
    # GPUs for SGLang engines when not colocated; None under colocate (= all training GPUs).
    rollout_gpus: int | None = Field(None, ge=1)
    # GPUs per SGLang engine (SGLang's TP).
    gpus_per_engine: int = Field(1, ge=1)
    tensor_parallel: int = Field(1, ge=1)
    pipeline_parallel: int = Field(1, ge=1)
    context_parallel: int = Field(1, ge=1)
    expert_parallel: int = Field(1, ge=1)
    expert_tensor_parallel: int = Field(1, ge=1)
    sequence_parallel: bool = False
    recompute: RecomputeConfig | None = None
    recompute_loss_function: bool = False
    # Token-budget batching (slime's --use-dynamic-batch-size) and its budget.
    dynamic_batch: bool = True
    max_tokens_per_gpu: Annotated[int, _BUDGET] | None = Field(None, ge=1)
    # slime --log-probs-chunk-size; -1 = no chunking.
    log_probs_chunk_size: OffOrPositiveInt | None = None
    # Megatron's --attention-backend (slime's MISC_ARGS); None = Megatron's own default (auto).
    attention_backend: Literal["flash", "fused", "unfused", "local", "auto"] | None = "flash"
    sglang_mem_fraction: Annotated[float, SGLANG_STATIC_MEMORY] = Field(0.8, gt=0, le=1)
    sglang_attention_backend: Name | None = None
    # SGLang --chunked-prefill-size; -1 disables chunked prefill.
    sglang_chunked_prefill_size: OffOrPositiveInt | None = None
    # Extra environment variables for the Ray job (CUDA_DEVICE_MAX_CONNECTIONS is derived).
    env_vars: dict[EnvVarName, Text] = Field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node

    @field_validator("gpu_type", mode="before")
    @classmethod
    def _gpu_as_printed(cls, value: Any) -> Any:
        # No name holds a space; a GPU's name as its vendor's tool prints it does: its type is the fix.
        meant = (
            named_gpu(value) if isinstance(value, str) and any(c.isspace() for c in value.strip()) else None
        )
        if meant is not None:
            raise Reread("a GPU's name as nvidia-smi or rocm-smi prints it; the GPU type is its model", meant)
        return value


# ----------------------------------------------------------------------------------------- curriculum


_ADAM = ReadWhen("name", ("adam",), "only Adam has betas (t3rl passes them to Megatron for adam alone)")


class OptimizerConfig(StrictModel):
    name: Literal["adam", "sgd"] = "adam"
    # Learning rate (Megatron --lr): below 1e-10 a step moves no float32 weight of ~1e-2, and 1 or more is a
    # typo (1e6 for 1e-6), never a schedule (t3rl_core.fields.LearningRate).
    lr: LearningRate = 1e-6
    # Megatron --lr-decay-style (WSD needs --lr-wsd-decay-iters in model.architecture.extra_args).
    lr_decay_style: Literal["constant", "linear", "cosine", "inverse-square-root", "WSD"] = "constant"
    # Share of the training steps with a linear warm-up from 0 (Megatron --lr-warmup-fraction); None = none.
    lr_warmup_fraction: float | None = Field(None, gt=0, lt=1)
    # Each step multiplies every weight by 1 - lr × weight_decay (Adam's decoupled decay, SGD's L2 term): it
    # must stay above 0, so weight_decay < 1 / lr (at or past it a step zeroes or flips every weight).
    weight_decay: Annotated[float, WEIGHT_DECAY] = Field(0.01, ge=0)
    adam_beta1: Annotated[float, _ADAM] = Field(0.9, ge=0, lt=1)
    adam_beta2: Annotated[float, _ADAM] = Field(0.999, ge=0, lt=1)
    # Gradient-norm clipping; 0 = none.
    clip_grad: float = Field(1.0, ge=0)

    @field_validator("weight_decay")
    @classmethod
    def _decay_keeps_weights(cls, value: float, info: ValidationInfo) -> float:
        lr = info.data.get("lr")
        if lr is not None and lr * value >= 1:
            raise ValueError(
                f"lr {lr:g} × weight_decay {value:g} = {lr * value:g}: each step multiplies every weight by "
                f"1 - lr × weight_decay = {1 - lr * value:g}, which zeroes or flips it (weight_decay must be "
                f"< 1 / lr = {1 / lr:g})"
            )
        return value


# A clip range is the ratio's distance from 1 it allows (DAPO's upper 0.28 beside 0.2): from 1 on, the ratio
# may double before the clip acts, which no recipe means (28 typed for 0.28, a percentage).
CLIP_HIGH = Usual(
    1.0,
    0.28,
    "a clip range is the distance of the ratio from 1 it allows (DAPO's 0.28): from 1 on the ratio may "
    "double before the clip acts",
    scale=100,
)


# A regulariser's weight beside the policy-gradient term, whose advantages are of size ~1 (GRPO's are
# z-scores): above 1 the regulariser outweighs the reward. Past 2**24 the trainer's float32 rounds the
# policy-gradient term away beside it (nothing learns from the reward), and 1e308 is inf there: the loss
# is inf or NaN at the first step.
REGULARISER_MAX = 2**24
REGULARISER = Usual(
    1.0,
    0.001,
    "the advantages it is added to are of size ~1 (GRPO's are z-scores): above 1 the regulariser "
    "outweighs the reward",
)


class AlgorithmConfig(StrictModel):
    """Policy-gradient settings (slime's GRPO_ARGS)."""

    advantage_estimator: Literal[
        "grpo", "gspo", "cispo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "ppo"
    ] = "grpo"
    use_kl_loss: bool = True
    kl_loss_coef: Annotated[float, REGULARISER] = Field(0.0, ge=0, le=REGULARISER_MAX)
    kl_loss_type: Annotated[
        Literal["k1", "k2", "k3", "low_var_kl"],
        ReadWhen("use_kl_loss", (True,), "slime computes no KL loss, of any type"),
    ] = "low_var_kl"
    entropy_coef: Annotated[float, REGULARISER] = Field(0.0, ge=0, le=REGULARISER_MAX)
    # PPO's clip range [1 - eps_clip, 1 + eps_clip] of the importance ratio: from 1 on its lower end is
    # at or below 0, and a ratio is never clipped from below.
    eps_clip: float = Field(0.2, gt=0, lt=1)
    # DAPO's clip-higher: the upper clip range is at least the lower one; None = eps_clip.
    eps_clip_high: Annotated[PositiveFloat, AtLeast("eps_clip"), CLIP_HIGH] | None = 0.28
    # Dual-clip PPO's lower bound for negative advantages (slime --eps-clip-c; veRL clip_ratio_c); None = off.
    eps_clip_c: float | None = Field(None, gt=1)
    # Log train/inference mismatch metrics through t3rl's TIS hook (slime's --get-mismatch-metrics).
    mismatch_metrics: bool = False
    # Apply truncated importance sampling (slime's --use-tis).
    use_tis: bool = False
    mis: MisConfig = Field(default_factory=MisConfig)
    # KL penalty in the reward before GRPO's group z-score (veRL's use_kl_loss=False + kl_ctrl, as
    # ToolRL trains), through t3rl's advantage hook; None = slime's own GRPO advantages.
    kl_in_reward: KlInRewardConfig | None = None
    # How advantages are built (t3rl_core.credit): trajectory = slime's estimator, one per episode; turn =
    # MT-GRPO's turn-level credit (the env's turn_rewards) through t3rl's advantage hook.
    credit: Literal["trajectory", "turn"] = "trajectory"
    # credit=turn: λ, the outcome advantage's weight on a rewarded turn's tokens (MT-GRPO: 1).
    turn_outcome_weight: Annotated[
        OutcomeWeight, ReadWhen("credit", ("turn",), "only turn-level credit weighs the outcome per turn")
    ] = 1.0


# An SFT stage learns the demonstrations' tokens with slime's SFT rollout and loss: t3rl passes slime none of
# the policy-gradient and sampling-group settings (launch/plan/slime_args.py builds no grpo or rollout
# group for it). Its sampling and episode limits are not here: an eval of its checkpoint reads them.
_RL_ONLY = ReadWhen("mode", ("rl",), "an SFT stage samples no groups and computes no advantage")
_IN_LOOP_EVAL = ReadWhen(
    "eval_interval", (), "no in-loop eval runs, and t3rl passes slime none of its settings"
)


class CurriculumConfig(StrictModel):
    """One training stage of a curriculum: data, batch sizes, lengths, algorithm, schedule."""

    name: Name
    # "rl": slime's policy-gradient loop; "sft": slime's SFT mode (cold start, rejection-sampled data).
    mode: Literal["rl", "sft"] = "rl"
    # Prepared split names (files <split>.jsonl of the prepare_data stage).
    train_split: SplitName
    eval_split: SplitName | None = None
    num_rollout: int | None = Field(None, ge=1)
    num_epoch: int | None = Field(None, ge=1)
    rollout_batch_size: int = Field(ge=1)
    # Samples per prompt: the GRPO group size (slime --n-samples-per-prompt); at most 1024, more is a typo.
    n_samples_per_prompt: int = Field(1, ge=1, le=MAX_SAMPLES_PER_TASK)
    global_batch_size: int | None = Field(None, ge=1)
    num_steps_per_rollout: int | None = Field(None, ge=1)
    over_sampling_batch_size: Annotated[int, _RL_ONLY] | None = Field(None, ge=1)
    rollout_shuffle: bool = True
    balance_data: Annotated[bool, _RL_ONLY] = True
    # Tokens per model call in training and in in-loop eval (slime's *-max-response-len).
    rollout_max_response_len: Annotated[int, CALL_TOKENS] = Field(ge=1)
    eval_max_response_len: Annotated[int, _IN_LOOP_EVAL, CALL_TOKENS] | None = Field(None, ge=1)
    # Sampling temperature (slime --rollout-temperature); 0 = greedy, which SGLang accepts (pre-flight
    # refuses it with a group baseline: every group would be one answer repeated).
    rollout_temperature: Temperature = 1.0
    rollout_top_p: float = Field(1.0, gt=0, le=1)
    n_samples_per_eval_prompt: Annotated[int, _IN_LOOP_EVAL] = Field(1, ge=1, le=MAX_SAMPLES_PER_TASK)
    # Model calls per episode, and optional caps on an episode's total tokens and on its tokens after
    # the prompt (model output + observations: Agent-R1's response budget).
    max_num_steps: int = Field(30, ge=1)
    max_context_len: int | None = Field(None, ge=1)
    max_response_len: int | None = Field(None, ge=1)
    algorithm: Annotated[AlgorithmConfig, _RL_ONLY] = Field(default_factory=AlgorithmConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    save_interval: int | None = Field(None, ge=1)
    eval_interval: int | None = Field(None, ge=1)
    # DAPO-style group filter (slime's --dynamic-sampling-filter-path), a dotted path.
    dynamic_sampling_filter: Annotated[HookPath, _RL_ONLY] | None = None


# ------------------------------------------------------------------------------- executor, tracking


class DryExecutorConfig(StrictModel):
    """Plan only: writes the run dir and plan.sh, runs nothing."""

    kind: Literal["dry"] = "dry"


# The ports of a Ray head t3rl starts (Ray's own defaults), the local executor's and each SLURM job's,
# declared once (conf/executor/ restates them, so that an override needs no '+': checked equal by
# tests/launch/test_one_truth_audit.py).
RAY_PORT = 6379
RAY_DASHBOARD_PORT = 8265


class LocalExecutorConfig(StrictModel):
    """Runs each stage's commands as subprocesses on this machine; starts its own Ray head for train."""

    kind: Literal["local"] = "local"
    ray_port: Port = RAY_PORT
    dashboard_port: Port = RAY_DASHBOARD_PORT
    # Seconds a child gets between SIGTERM and SIGKILL on Ctrl-C or failure.
    stop_grace_s: Delay = 10.0
    # Sweep points run at once on this machine (each its own launcher process).
    max_parallel: int = Field(1, ge=1)


class RayExecutorConfig(StrictModel):
    """Submits train stages to an existing Ray cluster through Ray's Job Submission SDK."""

    kind: Literal["ray"] = "ray"
    # http://host:8265; None = $RAY_ADDRESS.
    address: RayAddress | None = None
    working_dir: UploadDir | None = None
    # Seconds between SIGINT-triggered stop_job and giving up waiting for the job to end.
    stop_grace_s: Delay = 30.0
    # "local": prepare/convert/eval stages run here as subprocesses; "ray": they are Ray jobs too
    # (for clusters whose storage this machine cannot see).
    other_stages: Literal["local", "ray"] = "local"
    # Sweep points run at once; None = as many as the cluster's GPUs hold (each point's biggest stage).
    max_parallel: int | None = Field(None, ge=1)


class SlurmExecutorConfig(StrictModel):
    """Renders an sbatch script per stage and submits it through submitit."""

    kind: Literal["slurm"] = "slurm"
    account: Name | None = None
    partition: SlurmPartitions | None = None
    # sbatch --time, in a form SLURM reads (the kind, SlurmDuration, names them).
    time_limit: SlurmDuration = "24:00:00"
    container_image: ContainerImage | None = None
    container_mounts: Annotated[
        list[ContainerMount],
        Distinct(identity=mount_destination, what="mount destination"),
        ReadWhen("container_image", (), "no container is started, so nothing is mounted"),
    ] = Field(default_factory=empty_list)
    # More #SBATCH options, e.g. ["--qos=high", "--constraint=h100"].
    extra_sbatch: Annotated[list[SbatchOption], Distinct(identity=sbatch_option_name, what="option")] = Field(
        default_factory=empty_list
    )
    # Shell lines run first in every job (e.g. `source /shared/t3rl/.venv/bin/activate`).
    setup: ShellScript = Field(default_factory=empty_list)
    cpus_per_task: Annotated[int, NODE_CPUS] | None = Field(None, ge=1)
    # Whole nodes for the job (Ray and slime assume they own the node's GPUs).
    exclusive: bool = True
    # Ports of the Ray head that each job starts on its first node.
    ray_port: Port = RAY_PORT
    dashboard_port: Port = RAY_DASHBOARD_PORT
    # Seconds to wait for every node's GPUs to register with the Ray head before giving up.
    ray_start_timeout_s: Annotated[int, STARTUP_USUAL] = Field(600, ge=1)
    # Directory for submitit's files and the rendered scripts; None = <run dir>/slurm.
    folder: SharedOutputDir | None = None
    # Sweep points submitted at once (each its own SLURM jobs); None = all, SLURM's queue decides.
    max_parallel: int | None = Field(None, ge=1)


ExecutorConfig = Annotated[
    DryExecutorConfig | LocalExecutorConfig | RayExecutorConfig | SlurmExecutorConfig,
    Field(discriminator="kind"),
]


_TRACKER = ReadWhen("kind", ("tensorboard", "wandb"), "no tracker reads it")
# tensorboard's event files go to tracking.dir (slime's TENSORBOARD_DIR): no name of a run is passed to it.
_NAMED = ReadWhen(
    "kind", ("wandb",), "no tracker reads it except wandb (tensorboard's events go to tracking.dir)"
)


class TrackingConfig(StrictModel):
    """Experiment tracking, mapped to slime's flags."""

    kind: Literal["none", "tensorboard", "wandb"] = "none"
    project: Annotated[Label, _NAMED] | None = None
    group: Annotated[Label, _NAMED] | None = None
    run_name: Annotated[Label, _NAMED] | None = None
    # wandb: "online", "offline" (forced when no WANDB_API_KEY is set) or "disabled".
    mode: Annotated[
        Literal["online", "offline", "disabled"], ReadWhen("kind", ("wandb",), "only wandb has a mode")
    ] = "online"
    dir: Annotated[OutputDir, _TRACKER] | None = None


class ObjectiveConfig(StrictModel):
    """What an hparams search optimises: a number in an eval stage's summary.json (conf/hparams_search/)."""

    # Eval stage whose summary.json holds the metric; None = the pipeline's last eval stage.
    stage: StageName | None = None
    # Dotted key inside summary.json, e.g. "overall.accuracy".
    metric: DottedKey


class PathsConfig(StrictModel):
    """Where things live on the cluster and here."""

    runs_dir: OutputDir = "runs"
    # Where `t3rl plan` writes (never under runs_dir: `t3rl runs` lists runs, not plans).
    plans_dir: OutputDir = "plans"
    # Shared cache for conversions (<model>_torch_dist), reused across runs.
    checkpoints_dir: OutputDir = "checkpoints"
    models_dir: LocalPath = "models"
    # Prepared data (one copy per content key, linked into each run) and tiny models: shared storage
    # for cluster runs.
    cache_dir: OutputDir = "~/.cache/t3rl"
    slime_root: ClusterPath = "/root/slime"
    megatron_root: ClusterPath = "/root/Megatron-LM"
    # slime's interpreter on the GPU machines: train.py and slime's conversion tools.
    python: Interpreter = "python3"
    # t3rl's interpreter where the t3rl_core stages run (data, model preparation, eval and its SGLang
    # server); None = this machine's where they run here (local executor, Ray's other_stages: local),
    # `python` on the cluster (slurm, Ray's other_stages: ray).
    cluster_python: Interpreter | None = None


# ----------------------------------------------------------------------------------------------- stages


class PrepareModelStage(StrictModel):
    """Makes model.hf_checkpoint exist: builds a synthetic offline model, or checks a downloaded one."""

    kind: Literal["prepare_model"] = "prepare_model"


class PrepareDataStage(StrictModel):
    """Writes the env's dataset splits as JSONL (prompt + metadata)."""

    kind: Literal["prepare_data"] = "prepare_data"


class ConvertHfToTorchDistStage(StrictModel):
    """HF → Megatron torch_dist (slime's tools/convert_hf_to_torch_dist.py), cached by model name."""

    kind: Literal["convert_hf_to_torch_dist"] = "convert_hf_to_torch_dist"


class TrainStage(StrictModel):
    """One slime run (RL or SFT)."""

    kind: Literal["train"] = "train"
    curriculum: CurriculumConfig
    # Earlier stage whose weights this one starts from: a train stage, or None for the base model.
    init_from: StageRef | None = None
    # Topology changes for this stage only (e.g. {"context_parallel": 4}), merged onto `hardware`.
    hardware: dict[Identifier, Any] = Field(default_factory=dict)
    # This stage's overrides of the root `env` / `reward` sections (merged key by key), e.g. a curriculum
    # stage with {augmentation: {enabled: true}} or a format reward {name: bfcl_format}. The prepared data
    # is the run's: choose categories with the curriculum's train_split, not env.data.
    env: dict[Identifier, Any] = Field(default_factory=dict)
    reward: dict[Identifier, Any] = Field(default_factory=dict)
    # T3RL's debug scripts: "rollout_only" generates and saves rollouts without training (rollout GPUs
    # only); "train_only" trains on saved rollouts without SGLang. None = a normal run.
    debug: Literal["rollout_only", "train_only"] | None = None
    # Rollouts a debug stage generates or trains on (slime --num-rollout).
    debug_num_rollout: int = Field(2, ge=1)
    # train_only: the saved rollouts, an earlier rollout_only stage of this run or a directory holding
    # rollout_data_<id>.pt for ids 0 .. debug_num_rollout - 1.
    rollouts_from: StageRef | None = None


class ConvertTorchDistToHfStage(StrictModel):
    """Megatron → HF (slime's tools/convert_torch_dist_to_hf.py) of a train stage's last checkpoint."""

    kind: Literal["convert_torch_dist_to_hf"] = "convert_torch_dist_to_hf"
    source: StageName


class EvalStage(StrictModel):
    """Standalone evaluation; starts an SGLang server on `checkpoint` unless eval.engine.url is set."""

    kind: Literal["eval"] = "eval"
    # A convert_torch_dist_to_hf stage, or None for the base model.
    checkpoint: StageName | None = None
    # Overrides of the root `eval` section for this stage (e.g. {"split": "bfcl_val"}).
    eval: dict[Identifier, Any] = Field(default_factory=dict)


StageSpec = Annotated[
    PrepareModelStage
    | PrepareDataStage
    | ConvertHfToTorchDistStage
    | TrainStage
    | ConvertTorchDistToHfStage
    | EvalStage,
    Field(discriminator="kind"),
]


# --------------------------------------------------------------------------------------------- services


class ServiceConfig(ServiceFields):
    """A server some stages need while they run (tau2's LLM customer): started before the stage's
    commands, healthy before they run, stopped when the stage ends (t3rl_core.services). What it serves
    and where it answers are t3rl_core.service_fields', shared with the spec a stage starts it from."""

    # GPU ids the server sees (its CUDA_VISIBLE_DEVICES); empty = those the stage sees.
    gpus: Annotated[
        list[GpuId],
        Distinct(by="launch.checks.ledger.duplicate_gpus"),  # a repeat: the ledger's fix knows the free GPUs
    ] = Field(default_factory=empty_list)
    # argv prefix that starts the server; None = `<cluster python> -m sglang.launch_server`.
    launch: Argv | None = None
    # Stages that need it; None = every train and eval stage.
    stages: Annotated[list[StageName], Distinct()] | None = None
    # Key inside `env` that receives the server's URL (+ url_path), e.g. tau2's user.base_url.
    env_url_key: DottedKey | None = "user.base_url"
    # Path appended to the server's URL in `env_url_key` (SGLang's OpenAI-compatible API: /v1).
    url_path: UrlPath = "/v1"

    @model_validator(mode="after")
    def _what_it_serves(self) -> "ServiceConfig":
        if self.kind == "sglang" and self.model_path is None:
            raise ValueError("an SGLang service serves a model: set model_path")
        if self.kind == "command" and not self.command:
            raise ValueError("a command service is started by its command: set command (an argv)")
        if self.kind == "command" and (self.model_path is not None or self.tp != 1 or self.extra_args):
            raise ValueError(
                "model_path, tp and extra_args are an SGLang service's: a command service has none"
            )
        return self

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.url_path}"

    def serves(self, stage: str, kind: str) -> bool:
        """Whether stage `stage` (of `kind`) runs with this service."""
        return stage in self.stages if self.stages is not None else kind in ("train", "eval")


# ------------------------------------------------------------------------------------------------- run


class RunConfig(StrictModel):
    """A whole resolved experiment."""

    # The run's directory name under paths.runs_dir.
    name: PathComponent
    # slime's seed, as --seed and --rollout-seed (its prompt shuffle). t3rl's data preparation and evals
    # keep their own (env.data.seed, eval.seed): a train seed swept leaves the held-out tasks and their
    # sampling as they were, so points stay comparable.
    seed: Seed = 42
    model: ModelConfig
    hardware: HardwareConfig
    env: AnyEnvConfig
    reward: AnyRewardConfig
    eval: EvalConfig = Field(default_factory=EvalConfig)
    executor: ExecutorConfig = Field(default_factory=LocalExecutorConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    paths: PathsConfig = Field(default_factory=PathsConfig)
    # Stages in execution order; names are referenced by later stages.
    stages: dict[StageName, StageSpec] = Field(default_factory=dict)
    # Servers stages need while they run (name → how to start it; the name names its pid and log files).
    services: dict[PathComponent, ServiceConfig] = Field(default_factory=dict)
    # After a successful run, `t3rl run` prints the plan of this experiment (e.g. the GPU next step).
    next_experiment: Name | None = None
    # Set by an hparams_search config: the metric its trials are scored by.
    objective: ObjectiveConfig | None = None
    # True: an eval may score tasks a training stage of its checkpoint trained on (pre-flight refuses
    # that overlap otherwise: the env's `split_parts()` tell which splits share tasks).
    allow_train_eval_overlap: bool = False


def stage_sections(run: RunConfig, stage: TrainStage) -> tuple[Any, Any]:
    """The env and reward a train stage runs with: the root sections with its overrides merged in
    (ValueError naming what does not validate)."""
    env, reward = run.env, run.reward
    if stage.env:
        merged = overlay(run.env.model_dump(), stage.env)
        env = TypeAdapter(AnyEnvConfig).validate_python(merged)
    if stage.reward:
        base = (
            {}
            if "name" in stage.reward and stage.reward["name"] != run.reward.name
            else run.reward.model_dump()
        )
        reward = TypeAdapter(AnyRewardConfig).validate_python(overlay(base, stage.reward))
    return env, reward


def build_run_validator() -> None:
    """Build the run's validator, after those of the sections the checks also validate alone (a stage's
    hardware, its eval settings) and of the sections the runtime config shares with it (chat, parsers,
    MIS, KL-in-reward; the trial plan validates one per train stage) or that a rule dumps alone (the
    architecture): pydantic reuses a nested model's built schema, so built first they are built once;
    built after the run's, each is generated again (~18 M instructions of a cold validate of
    stage2_bfcl for the first two, ~9 M for the others; ~2 M more for a config that never validates
    them alone)."""
    for model in (
        MegatronArch,
        ChatConfig,
        ParsersConfig,
        MisConfig,
        KlInRewardConfig,
        HardwareConfig,
        EvalConfig,
        RunConfig,
    ):
        model.model_rebuild()


def build_validators() -> None:
    """Build now, rather than on first use (StrictModel defers them), the validators a resolve builds:
    the run's, and those the checks and the trial plan validate with (a stage's hardware, its eval
    settings, the runtime config), so that they overlap with a composing child (compose_ahead)."""
    build_run_validator()
    RuntimeConfig.model_rebuild()
