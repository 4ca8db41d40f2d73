"""Hunt wave six, models, engines and data: kinds that validated and failed (or ran wrong) later, each
closed by one declaration (docs/explanation/preflight.md, "Hunt wave six: models, engines, data").

- the Megatron flags of `model.architecture.extra_args` that build the model (a layer spec, extra norms,
  the rotated share of a head, rope scaling, a router's scoring), against the checkpoint: the hub id's
  model option, or a local config.json's rope settings (launch/checks/rules/model_inputs.py);
- a local checkpoint's model_type against the switches HF's class of it builds (norms, QKV bias, q/k
  norms, a gated MLP): compared with a hub option only (model_inputs.switches_of_the_local_checkpoint);
- a flag an architecture field writes, passed through while the field is off or unset
  (`--untie-embeddings-and-output-weights` on a tied model, `--num-experts` on a dense one): the checks
  read the field, Megatron the flag (model_inputs.modelled_flags_not_passed_through);
- a local tokenizer adding ids past the model's embedding rows (launch/checks/rules/model_inputs.py);
- a synthetic model (tiny_qwen3) under a run with no prepare_model stage before the stages loading it:
  nothing builds it, and it cannot be downloaded (launch/checks/rules/model_inputs.py, a warning);
- a fix swapping the model (`model=<option>`) chosen without the layout: SFT of a family slime has no loss
  mask for was told model=qwen2_5_3b_instruct at TP 4, whose 2 query groups TP 4 does not split
  (model_inputs.fitting_model tries each option against every scope's per-scope rules);
- a schedule flag slime never reads (`--lr-warmup-samples`, `--train-iters`: slime counts warmup and decay in
  optimizer steps and sets train_iters itself): refused as having no effect (launch/plan/slime_constraints);
- an SGLang KV pool (`--max-total-tokens`) no larger than one call's budget: SGLang cuts every request to
  the pool's room (launch/checks/rules/model_inputs.py);
- an sglang_mem_fraction whose room after the weights holds fewer KV-cache tokens than one call: SGLang
  sizes its pool from it and cuts every long call (model_inputs.kv_cache_left_holds_a_call, a warning);
- rollout engines computing in another number format than Megatron trains in (`--sglang-dtype float16`
  beside bf16, `--fp16` beside the checkpoint's bf16): a warning (model_inputs.py);
- rollout engines told to build another model than Megatron trains (`--sglang-json-model-override-args`
  changing a shape key: refused; rope or norm settings: warned); an eval server's override stays its own.

Each refusal names its key and a first fix that validates; the valid settings next to them are accepted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch.checks.hf_config import as_hf_config
from launch.checks.resolve import resolve
from launch.config.errors import Problem
from launch.config.schema import MegatronArch
from tests.support.fix_applier import apply_first_fix
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"
EXTRA = "model.architecture.extra_args"
LLAMA = ["model=llama3_1_8b_instruct", "hardware=h100x2"]
GLM = ["model=glm4_9b", "hardware.nodes=2", "executor=slurm"]
CONF = Path(__file__).parents[2] / "conf"


_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _refused(overrides: list[str], says: str, key: str) -> Problem:
    """The error at `key` saying `says`; its first fix, applied, validates."""
    found = errors(overrides)
    named = [e for e in found if says in e.message and e.key == key]
    assert named, f"not refused at {key} saying {says!r}: {[(e.key, e.message) for e in found]}"
    assert errors(fixed(overrides, named[0])) == [], named[0].fix
    return named[0]


def _checkpoint(where: Path, option: str, stated: dict[str, Any]) -> Path:
    """A local checkpoint dir whose config.json is the option's architecture plus `stated`."""
    shipped = yaml.safe_load((CONF / "model" / f"{option}.yaml").read_text())
    config = as_hf_config(MegatronArch.model_validate(shipped["architecture"])) | stated
    directory = where / option
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


# ------------------------------------------------- the flags that build the model, against the checkpoint

HUB_REFUSED = [
    # a list override replaces the list: GLM's layer spec, its extra norms and its half-rotated heads go
    ("glm_spec_dropped_by_a_list_override", [*GLM, f"{EXTRA}=[--no-rope-fusion]"], "lacks --spec"),
    # Llama 3.1's rope scaling dropped
    ("llama_rope_scaling_dropped", [*LLAMA, f"{EXTRA}=[]"], "lacks --use-rope-scaling"),
    # a flag of Llama's script copied onto Qwen3, which has no rope scaling
    ("rope_scaling_added_to_qwen", [f"{EXTRA}=[--use-rope-scaling]"], "adds --use-rope-scaling"),
]


@pytest.mark.parametrize(("overrides", "says"), [c[1:] for c in HUB_REFUSED], ids=[c[0] for c in HUB_REFUSED])
def test_model_building_flags_other_than_the_hub_checkpoints_are_refused(
    overrides: list[str], says: str
) -> None:
    problem = _refused([S1, *overrides], says, EXTRA)
    assert "as model option" in problem.message


def test_a_users_other_flags_are_kept_by_the_fix() -> None:
    problem = _refused([S1, *GLM, f"{EXTRA}=[--no-rope-fusion]"], "lacks --spec", EXTRA)
    assert problem.fix.startswith(f"set {EXTRA}=[--no-rope-fusion,--spec,")


def test_flags_that_do_not_build_the_model_are_the_users() -> None:
    # a kernel choice added to the option's own flags, and a factor written as 8 for 8.0
    llama = "[--use-rope-scaling,--rotary-scaling-factor,'8',--no-rope-fusion]"
    assert errors([S1, *LLAMA, f"{EXTRA}={llama}"]) == []
    assert errors([S1, f"{EXTRA}=[--no-rope-fusion]"]) == []
    assert errors([S1, *GLM]) == []


LOCAL_REFUSED = [
    (
        "llama3_scaling_without_its_flag",
        "llama3_1_8b_instruct",
        {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}},
        [*LLAMA, f"{EXTRA}=[]"],
        "--use-rope-scaling is not given",
    ),
    (
        "scaling_flag_on_a_checkpoint_without_scaling",
        "qwen3_4b_instruct_2507",
        {"rope_scaling": None},
        [f"{EXTRA}=[--use-rope-scaling]"],
        "--use-rope-scaling is given",
    ),
    (
        "rotated_share_of_another_value",
        "glm4_9b",
        {"partial_rotary_factor": 0.5},
        [*GLM, f"{EXTRA}=[--rotary-percent,'1.0']"],
        "--rotary-percent 1.0, not 0.5",
    ),
]


@pytest.mark.parametrize(
    ("option", "stated", "overrides", "says"),
    [c[1:] for c in LOCAL_REFUSED],
    ids=[c[0] for c in LOCAL_REFUSED],
)
def test_rope_flags_other_than_a_local_config_json_states_are_refused(
    option: str, stated: dict[str, Any], overrides: list[str], says: str, _in_tmp: Path
) -> None:
    local = [S1, *overrides, f"model.hf_checkpoint={_checkpoint(_in_tmp, option, stated)}"]
    problem = _refused(local, says, EXTRA)
    assert "config.json states" in problem.message
    # the option's own flags on the same checkpoint are accepted
    assert errors([x for x in local if not x.startswith(EXTRA)]) == []


def test_llama3_scaling_written_as_transformers_5_rope_parameters_is_read(_in_tmp: Path) -> None:
    stated = {"rope_parameters": {"rope_type": "llama3", "factor": 8.0, "rope_theta": 500000.0}}
    local = [S1, *LLAMA, f"model.hf_checkpoint={_checkpoint(_in_tmp, 'llama3_1_8b_instruct', stated)}"]
    _refused([*local, f"{EXTRA}=[]"], "--use-rope-scaling is not given", EXTRA)


# ---------------------------------------------------- a local checkpoint's model_type against the switches

SWITCHES_REFUSED = [
    ("qwen2_without_its_qkv_bias", "qwen2_5_7b_instruct", {"model_type": "qwen2"}, "add_qkv_bias=false"),
    ("qwen3_without_its_qk_norms", "qwen3_4b_instruct_2507", {"model_type": "qwen3"}, "qk_layernorm=false"),
    # GLM-4's class takes its QKV bias from attention_bias, true unless written
    ("glm4_bias_from_its_default", "glm4_9b", {"model_type": "glm4"}, "add_qkv_bias=false"),
]
MODELS = {"qwen2_5_7b_instruct": [], "qwen3_4b_instruct_2507": [], "glm4_9b": GLM}


@pytest.mark.parametrize(
    ("option", "stated", "change"), [c[1:] for c in SWITCHES_REFUSED], ids=[c[0] for c in SWITCHES_REFUSED]
)
def test_a_switch_other_than_a_local_checkpoints_class_builds_is_refused(
    option: str, stated: dict[str, Any], change: str, _in_tmp: Path
) -> None:
    local = [
        S1,
        f"model={option}",
        *MODELS[option],
        f"model.hf_checkpoint={_checkpoint(_in_tmp, option, stated)}",
    ]
    field = change.split("=")[0]
    problem = _refused(
        [*local, f"model.architecture.{change}"], "config.json's model_type", f"model.architecture.{field}"
    )
    assert f"{stated['model_type']} checkpoint" in problem.message
    assert errors(local) == []  # the option's own switches on it are accepted


# --------------------------------------------------------- a field's own flag passed through beside it

FIELD_REFUSED = [
    # Qwen3-4B-Instruct-2507 ties its embeddings
    ("untie_on_a_tied_model", [f"{EXTRA}=[--untie-embeddings-and-output-weights]"], "untie_embeddings"),
    # experts' flags on a dense model: one problem for the section
    (
        "experts_on_a_dense_model",
        [f"{EXTRA}=[--num-experts,'8',--moe-router-topk,'2']"],
        "--num-experts 8, --moe",
    ),
    # an optional size left to Megatron's default by the field, given by the flag
    (
        "glm_kv_channels",
        [
            *GLM,
            f"{EXTRA}=[--spec,slime_plugins.models.glm4,get_glm_spec,--post-self-attn-layernorm,"
            "--post-mlp-layernorm,--rotary-interleaved,--rotary-percent,'0.5',--kv-channels,'128']",
        ],
        "--kv-channels 128",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "says"), [c[1:] for c in FIELD_REFUSED], ids=[c[0] for c in FIELD_REFUSED]
)
def test_a_fields_flag_passed_through_beside_it_is_refused(overrides: list[str], says: str) -> None:
    problem = _refused([S1, *overrides], says, EXTRA)
    assert "writes, and it is" in problem.message


def test_the_kv_channels_alternative_validates() -> None:
    assert errors([S1, *GLM, "model.architecture.kv_channels=128"]) == []


# ------------------------------------------------------ a tokenizer's ids against the model's embedding


def _tokenizer(where: Path, name: str, added: dict[int, str]) -> Path:
    """A local tokenizer dir whose tokenizer_config.json adds `added` (id -> text)."""
    directory = where / name
    directory.mkdir(exist_ok=True)
    decoder = {str(i): {"content": text, "special": True} for i, text in added.items()}
    (directory / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": decoder}))
    (directory / "tokenizer.json").write_text("{}")
    return directory


LLAMA_TOKENS = {128000: "<|begin_of_text|>", 128009: "<|eot_id|>"}


def test_a_tokenizer_adding_ids_past_the_embedding_is_refused(_in_tmp: Path) -> None:
    # <tool_call> added to Llama 3.1's tokenizer (128256 ids) without resizing the model
    plus = _tokenizer(_in_tmp, "llama_plus", {**LLAMA_TOKENS, 128256: "<tool_call>"})
    problem = _refused(
        [S1, *LLAMA, f"model.chat.tokenizer={plus}"], "<tool_call> (128256)", "model.chat.tokenizer"
    )
    assert "128256 embedding rows" in problem.message
    # Megatron's rows raised alone: the download's config.json (as the option declares it) still has 128256
    found = errors([S1, *LLAMA, f"model.chat.tokenizer={plus}", "model.architecture.vocab_size=128512"])
    assert any("as model option llama3_1_8b_instruct declares" in e.message for e in found), found


def test_a_tokenizer_within_the_embedding_is_accepted(_in_tmp: Path) -> None:
    # the last of Llama's 256 reserved ids is its last row
    own = _tokenizer(_in_tmp, "llama_own", {**LLAMA_TOKENS, 128255: "<|reserved_special_token_247|>"})
    assert errors([S1, *LLAMA, f"model.chat.tokenizer={own}"]) == []


# ------------------------------------------------------------------ a synthetic model nothing builds


def _source_warnings(overrides: list[str]) -> list[Problem]:
    return [w for w in resolve(overrides).warnings if "built offline (model.synthetic)" in w.message]


def test_a_synthetic_model_no_stage_builds_is_warned_about(_in_tmp: Path) -> None:
    line = [S1, "model=tiny_qwen3", f"model.hf_checkpoint={_in_tmp / 'not_built'}"]
    (warning,) = _source_warnings(line)
    assert warning.key == "model.name" and "to_torch_dist, train" in warning.message
    applied = apply_first_fix(
        line, {"message": warning.message, "source": warning.source, "fix": warning.fix}
    )
    assert applied is not None and errors(applied) == [] and _source_warnings(applied) == []


def test_a_synthetic_model_built_first_or_already_is_accepted(_in_tmp: Path) -> None:
    # the quickstart builds it in its prepare_model stage; a directory an earlier run built is used
    assert _source_warnings(["+experiment=quickstart", f"model.hf_checkpoint={_in_tmp / 'not_built'}"]) == []
    built = _in_tmp / "built"
    built.mkdir()
    (built / "config.json").write_text("{}")
    assert _source_warnings([S1, "model=tiny_qwen3", f"model.hf_checkpoint={built}"]) == []


# ------------------------------------------------------------ a model swapped in by a fix fits the layout


def test_a_model_swapped_in_by_a_fix_fits_the_layout() -> None:
    # GLM-4 under ReTool's SFT stage at TP 4 (its own 2 query groups refused too): the family's fix
    line = ["+experiment=retool", "model=glm4_9b", "executor=slurm", "hardware.nodes=2"]
    line += ["hardware.tensor_parallel=4", "stages.rl.hardware.gpus_per_engine=2"]
    (problem,) = [e for e in errors(line) if "SFT loss masks" in e.message]
    assert problem.fix.startswith("set model=qwen2_5_7b_instruct"), problem.fix
    swapped = fixed(line, problem)
    assert errors(swapped) == []


# ------------------------------------------------------------------ schedule flags slime never reads

UNREAD = [
    ("warmup_in_samples", "[--lr-warmup-samples,'1000000']", "--lr-warmup-samples has no effect"),
    ("decay_in_samples", "[--lr-decay-samples,'1000']", "--lr-decay-samples has no effect"),
    ("train_iters_given", "[--train-iters,'10']", "--train-iters has no effect"),
]


@pytest.mark.parametrize(("extra", "says"), [c[1:] for c in UNREAD], ids=[c[0] for c in UNREAD])
def test_a_schedule_flag_slime_never_reads_is_refused(extra: str, says: str) -> None:
    _refused([S1, "stages.train.curriculum.optimizer.lr_decay_style=cosine", f"{EXTRA}={extra}"], says, EXTRA)


def test_a_sample_count_of_zero_is_megatrons_default_and_accepted() -> None:
    assert errors([S1, f"{EXTRA}=[--lr-warmup-samples,'0']"]) == []


# ------------------------------------------------------------------ an engine's pool and number format

POOL_REFUSED = [
    ("rollout_engines", f"{EXTRA}=[--sglang-max-total-tokens,'4000']", EXTRA, "rollout_max_response_len"),
    ("eval_server", "eval.server.extra_args=[--max-total-tokens,'1000']", "eval.server.extra_args", "4096"),
]


@pytest.mark.parametrize(
    ("override", "key", "says"), [c[1:] for c in POOL_REFUSED], ids=[c[0] for c in POOL_REFUSED]
)
def test_a_kv_pool_smaller_than_one_call_is_refused(override: str, key: str, says: str) -> None:
    problem = _refused([S1, "eval.max_new_tokens=4096", override], says, key)
    assert "KV pool" in problem.message


def test_a_kv_pool_larger_than_a_call_is_accepted() -> None:
    assert errors([S1, f"{EXTRA}=[--sglang-max-total-tokens,'64k']"]) == []


def _room_warnings(overrides: list[str]) -> list[Problem]:
    return [w for w in resolve(overrides).warnings if "for the KV cache after" in w.message]


def test_a_memory_fraction_leaving_less_kv_cache_than_one_call_is_warned_about() -> None:
    # Qwen3-4B's 7.5 GiB of weights in 6 % of an H200: about 7,000 tokens of KV cache, calls of 10,000
    line = [S1, "hardware.sglang_mem_fraction=0.06"]
    (warning,) = _room_warnings(line)
    assert warning.key == "hardware.sglang_mem_fraction"
    applied = apply_first_fix(
        line, {"message": warning.message, "source": warning.source, "fix": warning.fix}
    )
    assert applied is not None and errors(applied) == [] and _room_warnings(applied) == []


def test_a_fraction_with_room_for_a_call_or_a_pool_given_is_not_warned_about() -> None:
    assert _room_warnings([S1]) == []
    # the pool given outright is the other rule's to judge
    assert (
        _room_warnings(
            [S1, "hardware.sglang_mem_fraction=0.06", f"{EXTRA}=[--sglang-max-total-tokens,'64k']"]
        )
        == []
    )


def _format_warnings(overrides: list[str]) -> list[Problem]:
    return [w for w in resolve([S1, *overrides]).warnings if "rollout engines compute in" in w.message]


FORMATS_WARNED = [
    ("fp16_engines_beside_bf16", "[--sglang-dtype,float16]", "compute in fp16"),
    ("fp16_trainer_beside_the_checkpoints_bf16", "[--fp16]", "trains in fp16"),
]


@pytest.mark.parametrize(
    ("extra", "says"), [c[1:] for c in FORMATS_WARNED], ids=[c[0] for c in FORMATS_WARNED]
)
def test_engines_of_another_number_format_are_warned_about(extra: str, says: str) -> None:
    (warning,) = _format_warnings([f"{EXTRA}={extra}"])
    assert says in warning.message
    applied = apply_first_fix(
        [S1, f"{EXTRA}={extra}"], {"message": warning.message, "source": warning.source, "fix": warning.fix}
    )
    assert applied is not None and _format_warnings(applied[1:]) == []


def test_one_number_format_on_both_sides_is_accepted() -> None:
    assert _format_warnings([f"{EXTRA}=[--fp16,--sglang-dtype,half]"]) == []
    assert _format_warnings([f"{EXTRA}=[--sglang-dtype,bfloat16]"]) == []


OVERRIDE = "--sglang-json-model-override-args"


def test_engines_overriding_the_models_shape_are_refused() -> None:
    line = [S1, f"{EXTRA}=[{OVERRIDE},'{{\"num_hidden_layers\":12}}']"]
    problem = _refused(line, "changes num_hidden_layers", EXTRA)
    assert "other shapes" in problem.message


def test_an_engine_override_that_is_no_json_is_refused() -> None:
    _refused([S1, f"{EXTRA}=[{OVERRIDE},notjson]"], "is no JSON", EXTRA)


def test_engines_overriding_how_positions_rotate_are_warned_about() -> None:
    line = [S1, f"{EXTRA}=[{OVERRIDE},'{{\"rope_theta\":10000}}']"]
    (warning,) = [w for w in resolve(line).warnings if OVERRIDE in w.message]
    assert "compute otherwise" in warning.message


def test_an_eval_servers_override_and_an_unrelated_key_are_accepted() -> None:
    eval_side = [S1, "eval.server.extra_args=[--json-model-override-args,'{\"rope_theta\":10000}']"]
    unrelated = [S1, f"{EXTRA}=[{OVERRIDE},'{{\"attn_logit_softcapping\":null}}']"]
    for line in (eval_side, unrelated):
        assert [w for w in resolve(line).warnings if "override-args" in w.message] == []
