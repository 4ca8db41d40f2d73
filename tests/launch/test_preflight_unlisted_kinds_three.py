"""A third round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates. Each refusal names the key the user changed, where it was set, and
a first fix that validates when applied; the valid settings next to them are accepted. The cases share
the first round's working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
from test_preflight import _BLOCK, _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

from launch.checks.rules import eval_load
from tests.support.cli_app import warned_with_a_fix_that_clears_it
from tests.support.fix_applier import apply_first_fix

S1 = "+experiment=stage1_bfcl"
TAU2 = "+experiment=tau2_pipeline"
RETOOL = "+experiment=retool"
DEBUG = "+experiment=bfcl_debug"
TOOLRL = "+experiment=toolrl_grpo"
# DeepSeek-V3 on a layout that plans (SLURM: 16 nodes are not this machine's)
MOE = [S1, "model=deepseek_v3", "hardware.nodes=16", "hardware.tensor_parallel=4"]
MOE += ["hardware.expert_parallel=128", "executor=slurm"]
# A uniform recompute of chunks that divide its 61 layers (launch/checks/rules/megatron.py).
MOE += ["hardware.recompute.num_layers=1"]
A = "model.architecture"

# (id, overrides, key named, a fragment of the message)
BAD = [
    (
        "head_size_of_another_checkpoint",
        [S1, f"{A}.kv_channels=64"],
        f"{A}.kv_channels",
        "checkpoint has head_dim 128",
    ),
    (
        "head_size_left_to_megatrons_default",
        [S1, f"{A}.kv_channels=null"],
        f"{A}.kv_channels",
        "kv_channels is 80, but",
    ),
    (
        "experts_of_another_checkpoint",
        [*MOE, f"{A}.moe.num_experts=128"],
        f"{A}.moe.num_experts",
        "cannot load the checkpoint's weights into a model of that shape",
    ),
    (
        "routed_to_other_experts_than_trained",
        [*MOE, f"{A}.moe.moe_router_topk=4"],
        f"{A}.moe.moe_router_topk",
        "num_experts_per_tok 8",
    ),
    (
        "latent_rank_of_another_checkpoint",
        [*MOE, f"{A}.mla.kv_lora_rank=256"],
        f"{A}.mla.kv_lora_rank",
        "kv_lora_rank 512",
    ),
    (
        "norms_of_another_architecture",
        [S1, f"{A}.normalization=LayerNorm"],
        f"{A}.normalization",
        "is built with RMSNorm (as model option qwen3_4b_instruct_2507 declares; config.json does not say)",
    ),
    (
        "qkv_bias_dropped_from_a_model_that_has_it",
        [S1, "model=qwen2_5_7b_instruct", f"{A}.add_qkv_bias=false"],
        f"{A}.add_qkv_bias",
        "Qwen/Qwen2.5-7B-Instruct is built with true",
    ),
    (
        "sft_on_a_family_slime_cannot_mask",
        [RETOOL, "model=glm4_9b"],
        "model.family",
        "slime's SFT loss masks know the chat families",
    ),
    (
        "a_model_no_layout_of_the_hardware_holds",
        [TOOLRL, "model=deepseek_v3"],
        "model.name",
        "deepseek_v3 needs ~7472 GiB per GPU",
    ),
    (
        "a_section_of_another_env_kind_added_deeper",
        [S1, "+env.user.extra_body.a=1"],
        "env.user",
        "unknown key 'user' under 'env'",
    ),
    (
        "a_released_model_built_offline_from_noise",
        [S1, "model.synthetic=true"],
        "model.synthetic",
        "builds random weights of Qwen/Qwen3-4B-Instruct-2507's architecture",
    ),
    (
        "a_stages_env_override_of_no_field",
        [S1, "+stages.train.env.nosuch=1"],
        "stages.train.env.nosuch",
        "unknown key 'nosuch' under 'stages.train.env'",
    ),
    (
        "a_stages_env_override_of_the_wrong_kind",
        [S1, "+stages.train.env.augmentation.enabled=maybe"],
        "stages.train.env.augmentation.enabled",
        "Input should be a valid boolean",
    ),
    (
        "a_stages_env_override_misspelt",
        [S1, "+stages.train.env.augmentatio.enabled=true"],
        "stages.train.env.augmentatio",
        "unknown key 'augmentatio'",
    ),
    (
        "a_stages_reward_override_of_no_reward",
        [S1, "+stages.train.reward.name=nosuch"],
        "stages.train.reward.name",
        "unknown reward 'nosuch'",
    ),
    (
        "a_section_of_another_env_kind_added",
        [S1, "+env.user.name=x"],
        "env.user",
        "unknown key 'user' under 'env'",
    ),
    (
        "a_port_t3rl_binds_where_a_called_server_listens",
        [TAU2, "eval.server.port=30001"],
        "eval.server.port",
        "the server env.user.base_url calls (http://127.0.0.1:30001/v1)",
    ),
    (
        "a_called_server_moved_onto_a_port_t3rl_binds",
        [TAU2, "env.user.base_url=http://127.0.0.1:30000/v1"],
        "env.user.base_url",
        "a server the run calls, and does not start, listens there",
    ),
    (
        "an_engine_url_on_the_ray_heads_port",
        [S1, "eval.engine.url=http://127.0.0.1:8265"],
        "eval.engine.url",
        "the local Ray head (dashboard, jobs API)",
    ),
    (
        "two_splits_of_an_env_in_one_file",
        [RETOOL, "env.data.train_split=retool_test"],
        "env.data.train_split",
        "env.data.train_split and env.data.test_split both name split 'retool_test'",
    ),
    (
        "a_split_renamed_where_it_is_prepared_only",
        [RETOOL, "env.data.test_split=held_out"],
        "env.data.test_split",
        "env.data.test_split names it held_out instead",
    ),
    (
        "samples_lowered_below_the_evals_pass_k",
        [TAU2, "stages.eval.eval.samples=1"],
        "stages.eval.eval.samples",
        "pass@k for k = [2, 4] needs that many samples per task",
    ),
    (
        "more_rollouts_trained_on_than_saved",
        [DEBUG, "stages.train.debug_num_rollout=5"],
        "stages.train.debug_num_rollout",
        "'rollouts' saves 2 rollouts, stage train trains on 5",
    ),
    (
        "fewer_rollouts_saved_than_trained_on",
        [DEBUG, "stages.rollouts.debug_num_rollout=1"],
        "stages.rollouts.debug_num_rollout",
        "'rollouts' saves 1 rollouts",
    ),
    (
        "saved_rollouts_of_a_normal_stage",
        [DEBUG, "stages.train.debug=null"],
        "stages.train.debug",
        "only a debug: train_only stage reads saved rollouts",
    ),
    (
        "weights_converted_from_a_rollout_only_stage",
        [DEBUG, "+stages.to_hf.kind=convert_torch_dist_to_hf", "+stages.to_hf.source=rollouts"],
        "stages.to_hf.source",
        "only generates rollouts: it saves no weights",
    ),
    (
        "colocation_switched_off_without_engine_gpus",
        [S1, "hardware.colocate=false"],
        "hardware.colocate",
        "rollout_gpus is not set",
    ),
    (
        "a_sections_own_check_after_an_override",
        [TOOLRL, "reward.schedule_length=true"],
        "reward",
        "schedule_length changes the length reward, which needs with_length: true",
    ),
    (
        "a_service_added_without_its_model",
        [S1, "+services.user.port=30002"],
        "services.user",
        "an SGLang service serves a model",
    ),
    (
        "demonstrations_drawn_from_the_scored_tasks",
        [TAU2, "env.data.demonstrations_split=test"],
        "env.data.demonstrations_split",
        "the eval would report memorised tasks",
    ),
    (
        "a_rollout_stage_turned_into_a_train_only_stage",
        [DEBUG, "stages.rollouts.debug=train_only"],
        "stages.rollouts.debug",
        "stage 'rollouts' saves no debug rollouts",
    ),
]

UNUSUAL = [
    ("head_size_given_as_megatrons_default", [S1, "model=glm4_9b", f"{A}.kv_channels=128"]),
    ("deepseek_as_shipped", MOE),
    ("a_tiny_model_built_offline", ["+experiment=quickstart", "model.synthetic=true"]),
    ("a_stages_env_override_valid", [S1, "+stages.train.env.augmentation.enabled=true"]),
    ("a_stages_reward_of_another_name", [S1, "+stages.train.reward.name=binary"]),
    ("a_called_servers_port_bound_on_the_cluster", [TAU2, "executor=slurm", "eval.server.port=30001"]),
    ("a_called_server_on_another_host", [TAU2, "env.user.base_url=http://10.0.0.5:30000/v1"]),
    ("two_callers_of_one_server", [TAU2, "eval.engine.url=http://127.0.0.1:30001"]),
    (
        "a_split_renamed_on_both_sides",
        [RETOOL, "env.data.train_split=mine", "stages.rl.curriculum.train_split=mine"],
    ),
]


C = "stages.train.curriculum"
# (id, overrides, key warned about, a fragment of the message): a setting that does nothing (ReadWhen)
UNREAD = [
    (
        "adam_betas_of_sgd",
        [S1, f"{C}.optimizer.name=sgd", f"{C}.optimizer.adam_beta2=0.95"],
        f"{C}.optimizer.adam_beta2",
        f"{C}.optimizer.name is sgd: only Adam has betas",
    ),
    (
        "kl_type_without_a_kl_loss",
        [S1, f"{C}.algorithm.use_kl_loss=false", f"{C}.algorithm.kl_loss_type=k3"],
        f"{C}.algorithm.kl_loss_type",
        "use_kl_loss is false",
    ),
    (
        "recompute_layers_of_a_selective_recompute",
        [S1, "hardware.recompute.granularity=selective", "hardware.recompute.num_layers=4"],
        "hardware.recompute.num_layers",
        "hardware.recompute.granularity is selective",
    ),
    ("wandb_mode_under_tensorboard", [S1, "tracking.mode=offline"], "tracking.mode", "only wandb has a mode"),
    (
        "token_budget_without_dynamic_batching",
        [
            "+experiment=stage2_bfcl",
            "+stages.train.hardware.dynamic_batch=false",
            "hardware.max_tokens_per_gpu=9000",
        ],
        "hardware.max_tokens_per_gpu",
        "stages.train.hardware.dynamic_batch is false",
    ),
    (
        "in_loop_eval_setting_without_in_loop_eval",
        [S1, f"{C}.eval_split=null", f"{C}.eval_interval=null", f"{C}.n_samples_per_eval_prompt=8"],
        f"{C}.n_samples_per_eval_prompt",
        f"{C}.eval_interval is null",
    ),
    (
        "turn_weight_of_trajectory_credit",
        [S1, f"+{C}.algorithm.turn_outcome_weight=0.5"],
        f"{C}.algorithm.turn_outcome_weight",
        "credit is trajectory",
    ),
    (
        "a_learning_rate_of_a_stage_that_trains_nothing",
        [DEBUG, "stages.rollouts.curriculum.optimizer.lr=1e-5"],
        "stages.rollouts.curriculum.optimizer.lr",
        "stages.rollouts.debug is rollout_only: it generates rollouts and trains nothing",
    ),
]
# (id, overrides, key warned about, a fragment of the message): valid, but it does not do what it says
WARNED = [
    (
        "an_envs_turn_limit_raised_alone",
        [RETOOL, "env.max_turns=10"],
        "env.max_turns",
        "ends every episode first (stages.rl.curriculum.max_num_steps 5, eval.max_num_steps 5)",
    ),
    (
        "a_stages_step_limit_raised_alone",
        [RETOOL, "stages.rl.curriculum.max_num_steps=10"],
        "stages.rl.curriculum.max_num_steps",
        "env.max_turns 5 ends every episode first",
    ),
    (
        "sglang_given_the_whole_gpu",
        [S1, "hardware.sglang_mem_fraction=1.0"],
        "hardware.sglang_mem_fraction",
        "activations and CUDA graph buffers live in the rest of the GPU",
    ),
]
# ... and the same settings where they are read: no warning
READ = [
    ("adam_betas_of_adam", [S1, f"{C}.optimizer.adam_beta2=0.95"]),
    ("recompute_layers_of_a_full_recompute", [S1, "hardware.recompute.num_layers=4"]),
    ("wandb_mode_under_wandb", [S1, "tracking=wandb", "tracking.mode=offline"]),
    ("a_learning_rate_of_the_stage_that_trains", [DEBUG, "stages.train.curriculum.optimizer.lr=1e-5"]),
    ("an_envs_turn_limit_lowered", [RETOOL, "env.max_turns=2"]),
    (
        "both_turn_limits_raised",
        [RETOOL, "env.max_turns=10", "stages.rl.curriculum.max_num_steps=10", "eval.max_num_steps=10"],
    ),
    ("sglang_given_most_of_the_gpu", [S1, "hardware.sglang_mem_fraction=0.95"]),
    (
        "token_budget_of_one_dynamic_stage",
        [
            "+experiment=bfcl_env_tuning",
            "+stages.stage2.hardware.dynamic_batch=false",
            "hardware.max_tokens_per_gpu=9000",
        ],
    ),
]

# The first round's fixture (a working directory, a composition cache, its dataset files) and filler.
data = first_round.data
_filled = first_round._filled

_WARNING = re.compile(_BLOCK.pattern.replace("^error ", "^warning "), re.M)


def _warnings(output: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in _WARNING.finditer(output)]


CASES = first_round.bad_and_unusual(BAD, UNUSUAL)


@pytest.mark.parametrize(("overrides", "key", "message"), CASES)
def test_refused_with_a_fix_that_validates_or_accepted(
    overrides: list[str], key: str | None, message: str, data: Path
) -> None:
    args = _filled(overrides, data)
    if key is None:
        code, out = _invoke("validate", *args)
        assert code == 0, out
        return
    block = refused_with_a_fix_that_validates(args, key, message)
    # set in: the line the user typed (the last override of each case), not the file around it
    assert f"override `{args[-1]}`" in block["source"], block


@pytest.mark.parametrize("overrides", [c[1] for c in READ], ids=[c[0] for c in READ])
def test_the_same_setting_where_it_is_read_is_not_warned(overrides: list[str], data: Path) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0 and " is set, but " not in out and "ends every episode first" not in out, out
    assert "sglang_mem_fraction" not in out, out


@pytest.mark.parametrize(
    ("overrides", "key", "message"), [c[1:] for c in UNREAD + WARNED], ids=[c[0] for c in UNREAD + WARNED]
)
def test_a_setting_that_does_nothing_is_warned_and_its_fix_clears_it(
    overrides: list[str], key: str, message: str, data: Path
) -> None:
    warned_with_a_fix_that_clears_it(overrides, key, message)


@pytest.mark.parametrize(
    ("sweep", "same"),
    [
        (["+experiment=quickstart", "tracking.kind=none", "tracking.project=a,b"], "tracking.project"),
        ([S1, f"{C}.optimizer.name=sgd", f"{C}.optimizer.adam_beta1=0.8,0.9"], f"{C}.optimizer.adam_beta1"),
        ([S1, f"{C}.optimizer.adam_beta1=0.8,0.9"], None),
    ],
    ids=["tracker_names_without_a_tracker", "adam_betas_of_sgd", "adam_betas_of_adam"],
)
def test_sweep_points_differing_only_where_nothing_reads_are_one_run(
    sweep: list[str], same: str | None, data: Path
) -> None:
    code, out = _invoke("validate", "-m", *sweep)
    assert code == 0, out
    said = f"they differ only in {same}, which nothing reads" in out
    assert said if same else "the same run twice" not in out, out


GIB = 1024**3


@pytest.mark.parametrize(
    ("overrides", "memory_gib", "fix"),
    [
        (["+experiment=quickstart", "model=qwen3_8b"], 16, "stages.eval_tiny.eval.engine.dtype=bfloat16"),
        (["+experiment=quickstart", "model=deepseek_v3"], 64, "set model=glm4_9b"),
    ],
    ids=["halved_by_bfloat16", "a_smaller_model"],
)
def test_an_hf_engine_on_the_cpu_holds_its_weights_in_this_machines_memory(
    overrides: list[str], memory_gib: int, fix: str, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quickstart's CPU eval loads the run's model with transformers here: a model swapped in whose
    weights exceed this machine's memory died of OOM at that stage, after the stages before it."""
    monkeypatch.setattr(eval_load, "memory_bytes", lambda: memory_gib * GIB)
    code, out = _invoke("validate", *overrides)
    assert code == 0, out  # warned: validate may run on another machine than the run
    (block,) = [b for b in _warnings(out) if b["key"] == "model.name" and "GiB of weights" in b["message"]]
    assert fix in block["fix"] and f"override `{overrides[-1]}`" in block["source"], out
    fixed = apply_first_fix(overrides, block)
    assert fixed is not None, block["fix"]
    code, out = _invoke("validate", *fixed)
    assert code == 0 and "GiB of weights" not in out, out
    assert "GiB of weights" not in _invoke("validate", "+experiment=quickstart")[1]
