"""Bad and valid-but-unusual configs of issue 9 (pre-flight completeness), as data for the tests.

Each bad case: id, overrides, the key the error must name, a fragment of the fix, a fragment of the
source. `{cd}` is a --config-dir the test fills with YAML files (see `write_config_dir`).
"""

from __future__ import annotations

from pathlib import Path

S1 = "+experiment=stage1_bfcl"
TOOLRL = "+experiment=toolrl_grpo"
ADVANTAGE_HOOK = "t3rl_core.hooks.advantage.kl_in_reward_grpo"
CUR = "stages.train.curriculum"

# tau2's LLM customer as a managed service with tp 2 (its GPUs are added by each case).
TAU2_SIM = ["+experiment=tau2_pipeline", "+services.user_sim.model_path=/m", "+services.user_sim.tp=2"]

BAD = [
    # 1. contracts between groups
    (
        "reward-needs-turns",
        ["env=retool_python"],
        "env.name",
        "env=bfcl_multi_turn",
        "conf/env/retool_python.yaml",
    ),
    (
        "tau2-reward-on-bfcl",
        ["reward=tau2_shaped"],
        "reward.name",
        "reward=",
        "conf/reward/tau2_shaped.yaml",
    ),
    (
        "retool-reward-on-bfcl",
        [S1, "reward=retool_outcome"],
        "reward.name",
        "reward=",
        "conf/reward/retool_outcome.yaml",
    ),
    (
        "toolrl-reward-on-tau2",
        ["+experiment=tau2_pipeline", "reward=toolrl"],
        "reward.name",
        "reward=tau2_shaped",
        "conf/reward/toolrl.yaml",
    ),
    (
        "foreign-template",
        ["model.chat.chat_template=llama3"],
        "model.chat.chat_template",
        "model.chat.chat_template=qwen3",
        "override `model.chat.chat_template=llama3`",
    ),
    (
        "foreign-template-glm",
        [S1, "model.chat.chat_template=glm4"],
        "model.chat.chat_template",
        "allow_foreign_template=true",
        "override `model.chat.chat_template=glm4`",
    ),
    (
        "family-changed-template-not",
        ["model.family=llama3"],
        "model.family",
        "model.family=qwen3",
        "override `model.family=llama3`",
    ),
    (
        "parser-of-other-family",
        ["model=llama3_1_8b_instruct", "model.parsers.tool_call_parser=qwen25"],
        "model.parsers.tool_call_parser",
        "tool_call_parser=llama3",
        "override `model.parsers.tool_call_parser",
    ),
    # 2. values consumed late
    (
        "eval-category-typo",
        ["eval.categories=[multi_turn_bse]"],
        "eval.categories",
        "eval.categories=[multi_turn_base]",
        "override `eval.categories=[multi_turn_bse]`",
    ),
    (
        "eval-category-other-env",
        [S1, "+stages.eval.eval.categories=[tau2_airline]"],
        "stages.eval.eval.categories",
        "stages.eval.eval.categories=[multi_turn_base",
        "override `+stages.eval.eval.categories",
    ),
    ("eval-categories-empty", ["eval.categories=[]"], "eval.categories", "", "override `eval.categories=[]`"),
    ("pass-k-zero", ["eval.pass_k=[0,1]"], "eval.pass_k", "eval.pass_k=[1]", "override `eval.pass_k=[0,1]`"),
    (
        "pass-k-stage-over-samples",
        [S1, "+stages.eval.eval.pass_k=[1,8]"],
        "stages.eval.eval.pass_k",
        "eval.samples=8",
        "override `+stages.eval.eval.pass_k=[1,8]`",
    ),
    (
        "split-ratios-sum",
        ["env.data.train_ratio=0.8", "env.data.val_ratio=0.3"],
        "env.data.val_ratio",
        "val_ratio=0.125",
        "override",
    ),
    (
        "objective-stage-typo",
        [S1, "+objective={stage: evl, metric: overall.accuracy}"],
        "objective.stage",
        "objective.stage=eval",
        "override `+objective=",
    ),
    (
        "objective-metric-typo",
        [S1, "+objective={stage: eval, metric: overall.acuracy}"],
        "objective.metric",
        "objective.metric=overall.accuracy",
        "override `+objective=",
    ),
    (
        "objective-stage-is-train",
        [S1, "+objective={stage: train, metric: overall.accuracy}"],
        "objective.stage",
        "objective.stage=eval",
        "override `+objective=",
    ),
    (
        "tau2-split-not-in-domain",
        ["+experiment=tau2_pipeline", "env.data.splits=[train,small]"],
        "env.data.splits",
        "env.data.splits=[train,test]",
        "override `env.data.splits=[train,small]`",
    ),
    # 3. typed fields
    (
        "sglang-url-scheme",
        ["eval.engine.url=localhost:30000"],
        "eval.engine.url",
        "",
        "override `eval.engine.url=localhost:30000`",
    ),
    (
        "ray-address-scheme",
        ["executor=ray", "executor.address=head:8265"],
        "executor.address",
        "",
        "override `executor.address=head:8265`",
    ),
    # a URL carrying the path its client appends, or a Ray address on the GCS port: the corrected URL
    (
        "sglang-url-with-generate",
        ["eval.engine.url=http://h:30000/generate"],
        "eval.engine.url",
        "eval.engine.url=http://h:30000",
        "override `eval.engine.url=http://h:30000/generate`",
    ),
    (
        "user-url-with-chat-completions",
        ["+experiment=tau2_pipeline", "env.user.base_url=http://h:30001/v1/chat/completions"],
        "env.user.base_url",
        "env.user.base_url=http://h:30001/v1",
        "override `env.user.base_url=http://h:30001/v1/chat/completions`",
    ),
    (
        "sandbox-url-with-run-code",
        [
            "env=retool_python",
            "sandbox=sandbox_fusion",
            "env.sandbox.url=http://h:8080/run_code",
            "reward=retool_outcome",
            "eval.split=retool_test",
        ],
        "env.sandbox.url",
        "env.sandbox.url=http://h:8080",
        "override `env.sandbox.url=http://h:8080/run_code`",
    ),
    (
        "ray-address-gcs-port",
        ["executor=ray", "executor.address=http://head:6379"],
        "executor.address",
        "executor.address=http://head:8265",
        "override `executor.address=http://head:6379`",
    ),
    # numeric domains: finite, "-1 = off" never 0, declared orders between fields
    (
        "lr-infinite",
        [S1, f"{CUR}.optimizer.lr=inf"],
        f"{CUR}.optimizer.lr",
        f"{CUR}.optimizer.lr=",
        f"override `{CUR}.optimizer.lr=inf`",
    ),
    (
        "chunk-size-zero",
        ["hardware.log_probs_chunk_size=0"],
        "hardware.log_probs_chunk_size",
        "hardware.log_probs_chunk_size=null",
        "override `hardware.log_probs_chunk_size=0`",
    ),
    (
        "format-range-reversed",
        [TOOLRL, "reward.format_min=2"],
        "reward.format_min",
        "reward.format_min=0.0",
        "override `reward.format_min=2`",
    ),
    (
        "slurm-time",
        ["executor=slurm", "executor.time_limit=2days"],
        "executor.time_limit",
        "",
        "override `executor.time_limit=2days`",
    ),
    (
        "slime-root-relative",
        ["paths.slime_root=slime"],
        "paths.slime_root",
        "",
        "override `paths.slime_root=slime`",
    ),
    (
        "sandbox-url-port",
        [
            "env=retool_python",
            "sandbox=sandbox_fusion",
            "env.sandbox.url=http://h:99999",
            "reward=retool_outcome",
            "eval.split=retool_test",
        ],
        "env.sandbox.url",
        "",
        "override `env.sandbox.url=http://h:99999`",
    ),
    # 4. resources
    (
        "671b-on-one-node",
        # recompute chunks of 1: 61 layers take no other uniform chunk (rules.megatron)
        [S1, "model=deepseek_v3", "hardware.attention_backend=auto", "hardware.recompute.num_layers=1"],
        "hardware.nodes",
        "hardware.nodes=16",
        "conf/hardware/h200x8.yaml",
    ),
    (
        "8b-on-one-h100",
        [S1, "model=qwen3_8b", "hardware=h100x1"],
        "hardware.tensor_parallel",
        "hardware.nodes=",
        "conf/hardware/h100x1.yaml",
    ),
    (
        "long-budget-oom",
        [S1, "hardware=h100x2", "hardware.max_tokens_per_gpu=262144"],
        "hardware.max_tokens_per_gpu",
        "",
        "override `hardware.max_tokens_per_gpu=262144`",
    ),
    (
        "rollout-beyond-cluster",
        [S1, "hardware.colocate=false", "hardware.rollout_gpus=8"],
        "hardware.rollout_gpus",
        "hardware.colocate=true",
        "override `hardware.rollout_gpus=8`",
    ),
    (
        "ray-head-two-nodes-local",
        [S1, "hardware=h200x8x2nodes"],
        "hardware.nodes",
        "executor=slurm",
        "conf/hardware/h200x8x2nodes.yaml",
    ),
    (
        "gpus-per-node-over-node",
        [S1, "hardware.node_gpus=4"],
        "hardware.node_gpus",
        "gpus_per_node=4",
        "override `hardware.node_gpus=4`",
    ),
    (
        "engine-weights",
        [S1, "model=qwen3_8b", "hardware=h100x8", "hardware.sglang_mem_fraction=0.1"],
        "hardware.sglang_mem_fraction",  # the share typed last is the side changed
        "hardware.sglang_mem_fraction=",
        "override `hardware.sglang_mem_fraction=0.1`",
    ),
    # 5. names that become paths
    ("name-escapes-runs", ["name=../../x"], "name", "", "override `name=../../x`"),
    ("name-with-slash", [S1, "name=a/b"], "name", "", "override `name=a/b`"),
    (
        "split-with-slash",
        [S1, f"{CUR}.train_split=../bfcl_train"],
        f"{CUR}.train_split",
        "",
        f"override `{CUR}.train_split=../bfcl_train`",
    ),
    ("model-name-dotdot", ["model.name=.."], "model.name", "", "override `model.name=..`"),
    # 6. user config files
    (
        "yaml-syntax",
        ["--config-dir", "{cd}", "+experiment=broken"],
        "{cd}/experiment/broken.yaml:4:1",
        "YAML",
        "{cd}/experiment/broken.yaml",
    ),
    (
        "yaml-duplicate-key",
        ["--config-dir", "{cd}", "+experiment=dup"],
        "{cd}/experiment/dup.yaml:4:3",
        "keep one",
        "{cd}/experiment/dup.yaml",
    ),
    # 9. did-you-mean: a schema key that is not composed gets the '+' form
    (
        "schema-key-not-composed",
        [S1, "stages.eval.eval.temperature=0.5"],
        "stages.eval.eval.temperature",
        "+stages.eval.eval.temperature=0.5",
        "override `stages.eval.eval.temperature=0.5`",
    ),
    # 11. what plan rejects, validate rejects
    (
        "no-save-interval",
        ["+experiment=bfcl_env_tuning", "stages.stage1.curriculum.save_interval=null"],
        "stages.stage1.curriculum.save_interval",
        "save_interval=",
        "override `stages.stage1.curriculum.save_interval",
    ),
    # 12. audit: numeric domains and meaningless combinations
    (
        "grpo-one-sample",
        [
            S1,
            f"{CUR}.n_samples_per_prompt=1",
            f"{CUR}.global_batch_size=32",
            f"{CUR}.dynamic_sampling_filter=null",
        ],
        f"{CUR}.n_samples_per_prompt",
        f"{CUR}.n_samples_per_prompt=8",
        f"override `{CUR}.n_samples_per_prompt=1`",
    ),
    (
        "reinforce-pp-unsupported",
        [S1, f"{CUR}.algorithm.advantage_estimator=reinforce_plus_plus"],
        f"{CUR}.algorithm.advantage_estimator",
        "advantage_estimator=grpo",
        "override",
    ),
    (
        "ppo-without-critic",
        [S1, f"{CUR}.algorithm.advantage_estimator=ppo"],
        f"{CUR}.algorithm.advantage_estimator",
        "advantage_estimator=grpo",
        "override",
    ),
    (
        "clip-high-below-low",
        [S1, f"{CUR}.algorithm.eps_clip_high=0.1"],
        f"{CUR}.algorithm.eps_clip_high",
        "eps_clip_high=0.2",
        "override",
    ),
    (
        "tis-bounds-empty",
        [S1, f"{CUR}.algorithm.mis.tis_lower_bound=3.0"],
        f"{CUR}.algorithm.mis.tis_lower_bound",
        "tis_lower_bound=0.5",
        "override",
    ),
    (
        "context-below-call",
        [S1, f"{CUR}.max_context_len=4096"],
        f"{CUR}.max_context_len",
        f"{CUR}.max_context_len=20000",
        "override",
    ),
    ("negative-lr", [S1, f"{CUR}.optimizer.lr=-1e-6"], f"{CUR}.optimizer.lr", ">= 1e-10", "override"),
    (
        "adam-beta-one",
        [S1, f"{CUR}.optimizer.adam_beta2=1.0"],
        f"{CUR}.optimizer.adam_beta2",
        "< 1",
        "override",
    ),
    (
        "negative-kl",
        [S1, f"{CUR}.algorithm.kl_loss_coef=-0.1"],
        f"{CUR}.algorithm.kl_loss_coef",
        ">= 0",
        "override",
    ),
    (
        "kl-in-reward-zero",
        [TOOLRL, f"{CUR}.algorithm.kl_in_reward.coef=0"],
        f"{CUR}.algorithm.kl_in_reward.coef",
        "> 0",
        "override",
    ),
    (
        "kl-in-reward-in-sft",
        ["+experiment=retool", "stages.sft.curriculum.algorithm.kl_in_reward={coef:0.001}"],
        "stages.sft.curriculum.algorithm.kl_in_reward",
        "stages.sft.curriculum.algorithm.kl_in_reward=null",
        "override",
    ),
    (
        "kl-in-reward-not-grpo",
        [TOOLRL, f"{CUR}.algorithm.advantage_estimator=reinforce_plus_plus_baseline"],
        f"{CUR}.algorithm.advantage_estimator",
        f"{CUR}.algorithm.advantage_estimator=grpo",
        "override",
    ),
    (
        "kl-in-reward-and-kl-loss",
        [TOOLRL, f"{CUR}.algorithm.use_kl_loss=true", f"{CUR}.algorithm.kl_loss_coef=0.01"],
        f"{CUR}.algorithm.kl_loss_coef",
        f"{CUR}.algorithm.kl_loss_coef=0",
        "override",
    ),
    (
        "advantage-hook-without-kl-in-reward",
        [S1, f"model.architecture.extra_args=[--custom-advantage-function-path,{ADVANTAGE_HOOK}]"],
        "model.architecture.extra_args",
        "model.architecture.extra_args=[]",
        "override",
    ),
    ("seed-too-big", ["seed=5000000000"], "seed", "< 4294967296", "override `seed=5000000000`"),
    ("negative-seed", ["seed=-1"], "seed", ">= 0", "override `seed=-1`"),
    ("ray-port-range", ["executor.ray_port=70000"], "executor.ray_port", "<= 65535", "override"),
    (
        "same-ray-ports",
        ["executor.dashboard_port=6379"],
        "executor.dashboard_port",
        "dashboard_port=8265",
        "override `executor.dashboard_port=6379`",
    ),
    (
        "eval-port-is-ray",
        [S1, "+stages.eval.eval.server={port: 8265}"],
        "stages.eval.eval.server.port",
        "stages.eval.eval.server.port=30000",
        "override",
    ),
    (
        "greedy-samples",
        [S1, "eval.samples=4", "eval.pass_k=[1,4]"],
        "eval.samples",
        "eval.temperature=1.0",
        "override `eval.samples=4`",
    ),
    (
        "etp-on-dense",
        ["hardware.expert_tensor_parallel=2"],
        "hardware.expert_tensor_parallel",
        "hardware.expert_tensor_parallel=1",
        "override",
    ),
    (
        "query-groups-vs-heads",
        ["model.architecture.num_query_groups=5"],
        "model.architecture.num_query_groups",
        "num_query_groups=8",  # the checkpoint's own, as its model option declares it
        "override",
    ),
    (
        "topk-over-experts",
        [
            "model=deepseek_v3",
            "model.architecture.moe.moe_router_topk=300",
            "hardware.attention_backend=auto",
        ],
        "model.architecture.moe.moe_router_topk",
        "moe_router_topk=8",  # the checkpoint's own, as its model option declares it
        "override",
    ),
    (
        "sglang-chunked-prefill",
        ["hardware.sglang_chunked_prefill_size=-5"],
        "hardware.sglang_chunked_prefill_size",
        ">= -1",
        "override",
    ),
    ("tracking-empty-project", ["tracking=wandb", "tracking.project=''"], "tracking.project", "", "override"),
    # managed services beside their stages' GPUs
    (
        "service-on-training-gpus",
        [*TAU2_SIM, "hardware.gpus_per_node=4", "+services.user_sim.gpus=[3,4]"],
        "services.user_sim.gpus",
        "services.user_sim.gpus=[4,5]",
        "override `+services.user_sim.gpus=[3,4]`",
    ),
    (
        "service-beyond-a-full-node",
        [*TAU2_SIM, "+services.user_sim.gpus=[6,7]"],
        "services.user_sim.gpus",
        "hardware.gpus_per_node=4 services.user_sim.gpus=[4,5]",
        "override `+services.user_sim.gpus=[6,7]`",
    ),
]

# Cases whose first fix is a file edit rather than an override (the test says so, with the reason).
FILE_FIXES = {
    "yaml-syntax": "the file itself must be edited",
    "yaml-duplicate-key": "the file itself must be edited",
    "missing-config-dir": "the directory must exist",
    "missing-search-path": "the directory must exist",
    "train-without-data": "a stage must be inserted before another (order of a mapping)",
    "hf-config-mismatch": "points at a real local checkpoint that disagrees with the model file",
}

# Valid-but-unusual configs: each must pass `t3rl validate` (exit 0).
UNUSUAL = [
    (
        "foreign-template-allowed",
        ["model.chat.chat_template=qwen2_5", "+model.chat.allow_foreign_template=true"],
    ),
    ("no-chat-template", ["model.chat.chat_template=null"]),
    ("https-url", ["eval.engine.url=https://sglang.example.org/api"]),
    ("ray-client-address", ["executor=ray", "executor.address=ray://head:10001"]),
    ("slurm-minutes", ["executor=slurm", "executor.time_limit='90'"]),
    ("slurm-days", ["executor=slurm", "executor.time_limit=2-12:00:00"]),
    ("slurm-unlimited", ["executor=slurm", "executor.time_limit=UNLIMITED"]),
    ("two-nodes-slurm", [S1, "hardware=h200x8x2nodes", "executor=slurm"]),
    (
        "async-rollout-on-spare-gpus",
        [
            S1,
            "hardware.colocate=false",
            "hardware.gpus_per_node=4",
            "hardware.node_gpus=8",
            "hardware.rollout_gpus=4",
        ],
    ),
    ("name-with-dots", ["name=exp.v2-lr_1e-6"]),
    ("service-fills-the-node", [*TAU2_SIM, "hardware.gpus_per_node=4", "+services.user_sim.gpus=[4,5]"]),
    ("url-on-checkpoint-warns", [S1, "eval.engine.url=http://10.0.0.1:30000"]),
    ("sampled-eval", [S1, "eval.samples=4", "eval.pass_k=[1,4]", "eval.temperature=0.7"]),
    ("eval-two-categories", ["eval.categories=[multi_turn_base,multi_turn_long_context]"]),
    (
        "objective-category-metric",
        [S1, "+objective={stage: eval, metric: categories.multi_turn_base.pass@1}"],
    ),
    ("objective-last-eval", [S1, "+objective={metric: overall.reward}"]),
    ("reinforce-no-groups-one-sample-sft", ["+experiment=retool"]),
    ("memory-unknown-gpu", [S1, "hardware.gpu_memory_gib=null", "model=qwen3_8b", "hardware=h100x1"]),
    ("ratios-leave-test", ["env.data.train_ratio=0.6", "env.data.val_ratio=0.39"]),
    ("eps-clip-equal", [S1, f"{CUR}.algorithm.eps_clip_high=0.2"]),
    ("gspo-groups", [S1, f"{CUR}.algorithm.advantage_estimator=gspo"]),
    (
        "moe-on-16-nodes",
        [
            S1,
            "model=deepseek_v3",
            "hardware.attention_backend=auto",
            "hardware.recompute.num_layers=1",
            "hardware.nodes=16",
            "hardware.tensor_parallel=4",
            "hardware.expert_parallel=128",
            "executor=slurm",
        ],
    ),
]


def write_config_dir(directory: Path) -> Path:
    """A user config dir with a YAML syntax error and a duplicated key."""
    (directory / "experiment").mkdir(parents=True)
    (directory / "experiment" / "broken.yaml").write_text(
        "# @package _global_\nname: broken\nhardware: [1,\n"
    )
    (directory / "experiment" / "dup.yaml").write_text(
        "# @package _global_\nhardware:\n  nodes: 1\n  nodes: 2\n"
    )
    return directory
