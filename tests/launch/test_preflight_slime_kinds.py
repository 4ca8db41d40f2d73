"""Kinds of mistakes slime and Megatron-LM users report (start-up assertions, flags dropped without a
word, a schedule that ends early, a number format the GPU lacks), each expressed as t3rl overrides:
refused at `t3rl validate` with exit 2, the key the user set named and a first fix that validates;
the unusual settings next to them that are valid are accepted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_preflight import _errors, _invoke

from launch.plan.slime_constraints import CONSTRAINTS, DERIVED, RELATIONS, violations
from launch.plan.slime_options import known_options
from tests.support.fix_applier import apply_first_fix

E = "+experiment=stage1_bfcl"
X = "model.architecture.extra_args"
V100 = ["hardware.gpu_type=V100", "hardware.gpu_memory_gib=32", "hardware.attention_backend=auto"]
V100 += ["hardware.sglang_attention_backend=null"]
# DeepSeek-V3 on a layout that plans (16 nodes, TP 4, EP 128).
# A DeepSeek-V3 of the user's own with top-1 routing (DeepSeek-V3's checkpoint routes to 8 experts).
TOP1 = "model.hf_id=me/deepseek-v3-top1"
MOE = ["model=deepseek_v3", "hardware.nodes=16", "hardware.tensor_parallel=4", "hardware.expert_parallel=128"]
MOE += ["executor=slurm", "hardware.attention_backend=auto"]
# A uniform recompute of chunks that divide its 61 layers (launch/checks/rules/megatron.py).
MOE += ["hardware.recompute.num_layers=1"]

# (id, overrides, key named, a fragment of the message)
BAD = [
    ("min_lr_above_lr", [f"{X}=[--min-lr,'1e-5']"], X, "--min-lr 1e-05 is not <= --lr 1e-06"),
    ("warmup_init_above_lr", [f"{X}=[--lr-warmup-init,'1e-3']"], X, "init_lr <= max_lr"),
    ("warmup_longer_than_training", [f"{X}=[--lr-warmup-iters,'1000']"], X, "is not < train_iters 800"),
    (
        "warmup_longer_than_decay",
        [
            f"{X}=[--lr-decay-iters,'10',--lr-warmup-iters,'20']",
            "stages.train.curriculum.optimizer.lr_decay_style=cosine",
        ],
        X,
        "--lr-warmup-iters 20 is not < --lr-decay-iters 10",
    ),
    (
        "warmup_iters_next_to_fraction",
        [f"{X}=[--lr-warmup-iters,'5']", "stages.train.curriculum.optimizer.lr_warmup_fraction=0.1"],
        X,
        "is ignored next to --lr-warmup-fraction",
    ),
    (
        "micro_batch_under_dynamic_batch",
        [f"{X}=[--micro-batch-size,'4']"],
        X,
        "ignored next to --use-dynamic",
    ),
    ("optimizer_offload_alone", [f"{X}=[--optimizer-cpu-offload]"], X, "--use-precision-aware-optimizer"),
    ("param_gather_without_grad_reduce", [f"{X}=[--overlap-param-gather]"], X, "--overlap-grad-reduce"),
    (
        "tp_comm_overlap_without_sp",
        [f"{X}=[--tp-comm-overlap]", "hardware.sequence_parallel=false"],
        X,
        "needs --sequence-parallel",
    ),
    (
        "distributed_activations_without_recompute",
        [f"{X}=[--distribute-saved-activations]", "hardware.recompute=null"],
        X,
        "--recompute-granularity full",
    ),
    ("fsdp2_under_slime", [f"{X}=[--use-torch-fsdp2]"], X, "--use-distributed-optimizer"),
    ("pipeline_split_without_pp", [f"{X}=[--decoder-last-pipeline-num-layers,'4']"], X, "> 1"),
    ("retain_interval_not_a_multiple", [f"{X}=[--save-retain-interval,'30']"], X, "not a multiple of"),
    ("fp8_param_gather_without_fp8", [f"{X}=[--fp8-param-gather]"], X, "needs --fp8-format"),
    ("main_params_from_ckpt_with_optim", [f"{X}=[--load-main-params-from-ckpt]"], X, "--no-load-optim"),
    ("delta_weights_alone", [f"{X}=[--update-weight-mode,delta]"], X, "--update-weight-transport disk"),
    ("disk_weights_without_dir", [f"{X}=[--update-weight-transport,disk]"], X, "--update-weight-disk-dir"),
    ("release_train_alone", [f"{X}=[--release-train]"], X, "needs --update-weight-transport disk"),
    ("teacher_without_opd", [f"{X}=[--opd-teacher-load,/tmp/teacher]"], X, "needs --use-opd"),
    ("opd_without_type", [f"{X}=[--use-opd]"], X, "needs --opd-type"),
    ("allgather_cp_on_a_dense_model", [f"{X}=[--allgather-cp]", "hardware.context_parallel=2"], X, "DSA"),
    (
        "seq_length_not_a_multiple_of_2cp",
        [f"{X}=[--seq-length,'4097']", "hardware.context_parallel=2"],
        X,
        "2 × --context-parallel-size 4",
    ),
    (
        "prompt_budget_beyond_context",
        # the cap passed through is the stage's own (launch/checks/rules/context_flags.py)
        [
            f"{X}=[--rollout-max-context-len,'12000',--rollout-max-prompt-len,'13000']",
            "stages.train.curriculum.max_context_len=12000",
        ],
        X,
        "at least one generated token",
    ),
    (
        "fp8_on_ampere",
        [
            f"{X}=[--fp8-format,e4m3,--fp8-recipe,blockwise]",
            "hardware.gpu_type=A100",
            "hardware.gpu_memory_gib=80",
        ],
        "hardware.gpu_type",
        "compute capability 8.9",
    ),
    ("bf16_on_volta", V100, "hardware.gpu_type", "slime trains in bf16"),
    (
        "ffn_not_split_over_tp",
        # another model than the hub checkpoint's (whose FFN size is 9728): one of the user's own
        ["model.architecture.ffn_hidden_size=9729", "model.hf_id=acme/custom-4b"],
        "model.architecture.ffn_hidden_size",
        "does not split over tensor_parallel 2",
    ),
    (
        "expert_ffn_not_split_over_etp",
        [
            *MOE,
            "hardware.nodes=32",
            "model.architecture.moe.moe_ffn_hidden_size=2049",
            "model.hf_id=acme/custom-moe",  # not DeepSeek-V3's checkpoint (its expert FFN is 2048)
            "hardware.expert_tensor_parallel=2",
        ],
        "hardware.expert_tensor_parallel",
        "does not split over expert_tensor_parallel 2",
    ),
    (
        "top1_router_without_pre_softmax",
        [*MOE, f"{X}=[]", "model.architecture.moe.moe_router_topk=1", TOP1],
        "model.architecture.moe.moe_router_topk",
        "a softmax over one expert has no gradient",
    ),
    (
        "top1_softmax_router_next_to_other_flags",
        [
            *MOE,
            f"{X}=[--moe-router-score-function,softmax]",
            "model.architecture.moe.moe_router_topk=1",
            TOP1,
        ],
        "model.architecture.moe.moe_router_topk",
        "a softmax over one expert has no gradient",
    ),
    (
        "allgather_dispatcher_replaced",
        # a DeepSeek-V3 of the user's own: the list replaces the hub option's YaRN and router flags, which
        # rules/model_inputs.py refuses for the hub checkpoint itself
        [*MOE, f"{X}=[--moe-token-dispatcher-type,allgather]", "model.hf_id=me/deepseek-v3-own"],
        X,
        "slime turns it into alltoall",
    ),
    (
        "unfused_attention_under_cp",
        ["hardware.attention_backend=unfused", "hardware.context_parallel=2"],
        "hardware.context_parallel",
        "context parallelism runs in its flash and fused kernels only",
    ),
    (
        "local_attention_without_local_spec",
        ["hardware.attention_backend=local"],
        "hardware.attention_backend",
        "--spec local",
    ),
    (
        "micro_batches_not_dividing_the_global_batch",
        [f"{X}=[--micro-batch-size,'3']", "hardware.dynamic_batch=false"],
        X,
        "global batch 512 is not a multiple of --micro-batch-size × data-parallel ranks 12",
    ),
    (
        "uneven_pipeline_middle_not_even",
        [
            f"{X}=[--decoder-last-pipeline-num-layers,'7']",
            "hardware.pipeline_parallel=4",
            "hardware.recompute.num_layers=1",
        ],
        "hardware.pipeline_parallel",
        "29 layers are left to 3 middle pipeline stages",
    ),
    (
        "uneven_pipeline_more_layers_than_the_model",
        [
            f"{X}=[--decoder-first-pipeline-num-layers,'20',--decoder-last-pipeline-num-layers,'20']",
            "hardware.pipeline_parallel=2",
        ],
        "hardware.pipeline_parallel",
        "-4 layers are left to 0 middle pipeline stages",
    ),
    ("checkpoint_format_not_torch_dist", [f"{X}=[--ckpt-format,torch]"], X, "read torch_dist checkpoints"),
    ("optimizer_not_saved_but_loaded", [f"{X}=[--no-save-optim]"], X, "needs --no-load-optim"),
    ("wsd_flag_without_wsd", [f"{X}=[--lr-wsd-decay-iters,'10']"], X, "--lr-decay-style WSD"),
    (
        "virtual_pipeline_without_pp",
        [f"{X}=[--num-layers-per-virtual-pipeline-stage,'4']"],
        X,
        "the interleaved schedule needs pipeline stages",
    ),
    (
        "virtual_stage_not_dividing_a_stage",
        [f"{X}=[--num-layers-per-virtual-pipeline-stage,'4']", "hardware.pipeline_parallel=2"],
        X,
        "layers per pipeline stage 18 is not a multiple",
    ),
    (
        "expert_bias_without_sigmoid_router",
        [*MOE, f"{X}=[--moe-router-enable-expert-bias]"],
        X,
        "--moe-router-score-function sigmoid",
    ),
]

# Unusual but valid: next to each refusal, the setting that is right.
UNUSUAL = [
    (
        "min_lr_below_lr",
        [f"{X}=[--min-lr,'1e-7']", "stages.train.curriculum.optimizer.lr_decay_style=cosine"],
    ),
    ("short_warmup", [f"{X}=[--lr-warmup-iters,'10']"]),
    ("optimizer_offload", [f"{X}=[--optimizer-cpu-offload,--use-precision-aware-optimizer]"]),
    ("param_gather", [f"{X}=[--overlap-param-gather,--overlap-grad-reduce]"]),
    ("seq_length_under_cp", [f"{X}=[--seq-length,'8192']", "hardware.context_parallel=2"]),
    ("fp8_on_hopper", [f"{X}=[--fp8-format,e4m3,--fp8-recipe,blockwise]"]),
    ("fp16_on_volta", [*V100, f"{X}=[--fp16]"]),
    ("retain_interval_multiple", [f"{X}=[--save-retain-interval,'40']"]),
    (
        "virtual_pipeline",
        [
            f"{X}=[--num-layers-per-virtual-pipeline-stage,'3']",
            "hardware.pipeline_parallel=2",
            "hardware.recompute.num_layers=1",
        ],
    ),
    (
        "top1_router_with_pre_softmax",
        [*MOE, f"{X}=[--moe-router-pre-softmax]", "model.architecture.moe.moe_router_topk=1", TOP1],
    ),
]

# Settings that run but are probably wrong: accepted, with a warning on the key.
WARNED = [
    (
        "decay_shorter_than_training",
        [f"{X}=[--lr-decay-iters,'100']", "stages.train.curriculum.optimizer.lr_decay_style=cosine"],
        X,
        "stays at --min-lr for the last 700 steps",
    ),
    ("decay_flag_under_constant_schedule", [f"{X}=[--min-lr,'1e-7']"], X, "--min-lr has no effect"),
    (
        "eval_split_never_evaluated",
        ["stages.train.curriculum.eval_interval=null"],
        "stages.train.curriculum.eval_interval",
        "the in-loop eval never runs",
    ),
    (
        "experts_and_tp_without_sp",
        [*MOE, "hardware.sequence_parallel=false"],
        "hardware.sequence_parallel",
        "sequence parallelism must be used",
    ),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One working directory and composition cache for the module (each case only validates)."""
    root = tmp_path_factory.mktemp("slime_kinds")
    (root / "work").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root / "work")
        patch.setenv("T3RL_CACHE_DIR", str(root / "cache"))
        patch.setenv("COLUMNS", "400")
        yield root


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_kind_is_refused_with_key_and_a_fix_that_validates(
    overrides: list[str], key: str, message: str, workdir: Path
) -> None:
    refused_with_a_fix_that_validates([E, *overrides], key, message)


def refused_with_a_fix_that_validates(args: list[str], key: str, message: str) -> dict[str, str]:
    """`t3rl validate` refuses `args` with an error on `key` saying `message`, whose first fix validates;
    that error's block (key, message, source, fix)."""
    code, out = _invoke("validate", *args)
    assert code == 2, out
    blocks = [b for b in _errors(out) if b["key"] == key and message in b["message"]]
    assert blocks, f"no error on {key!r} saying {message!r}:\n{out}"
    fixed = apply_first_fix(args, blocks[0])
    assert fixed is not None, blocks[0]["fix"]
    code, out = _invoke("validate", *fixed)
    assert code == 0, f"fix {blocks[0]['fix']!r} does not validate:\n{out}"
    return blocks[0]


@pytest.mark.parametrize("overrides", [c[1] for c in UNUSUAL], ids=[c[0] for c in UNUSUAL])
def test_unusual_but_valid_setting_is_accepted(overrides: list[str], workdir: Path) -> None:
    code, out = _invoke("validate", E, *overrides)
    assert code == 0, out


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_probably_wrong_setting_is_warned(
    overrides: list[str], key: str, message: str, workdir: Path
) -> None:
    code, out = _invoke("validate", E, *overrides)
    assert code == 0, out
    assert re.search(rf"^warning {re.escape(key)}: .*{re.escape(message)}", out, re.M), out


def test_every_declared_flag_is_an_option_of_slime_or_megatron() -> None:
    """A misspelt flag in a declaration would make its constraint never apply."""
    options = known_options()
    conditions = [c.flag for c in CONSTRAINTS] + [t for c in CONSTRAINTS for t in (*c.requires, *c.excludes)]
    conditions += [c.ignored_with for c in CONSTRAINTS if c.ignored_with]
    conditions += [side for r in RELATIONS for side in (r.left, r.right) if side not in DERIVED]
    conditions += [r.when for r in RELATIONS if r.when]
    flags = {re.split(r"[=>]", term)[0] for condition in conditions for term in condition.split("|")}
    assert sorted(f for f in flags if f not in options) == []


def test_conditions_read_values_and_numbers() -> None:
    assert list(violations(["--update-weight-mode", "delta", "--colocate"]))
    assert not list(violations(["--update-weight-mode", "full", "--colocate"]))
    assert list(violations(["--allgather-cp", "--context-parallel-size", "2"]))
    assert not list(violations(["--allgather-cp", "--context-parallel-size", "1"]))
    # slime turns Megatron's distributed optimizer on itself: FSDP2 is refused without naming it.
    assert list(violations(["--use-torch-fsdp2"]))
