"""Hunt wave five, models and hardware: combinations of a model family and a hardware layout that
validated and failed on the GPUs, each closed by one declaration.

- a uniform full recompute whose chunk (`recompute.num_layers`) does not divide the layers of each
  pipeline block: Megatron reads a layer past the block's last (launch/checks/rules/megatron.py);
- an architecture section (experts, multi-latent attention) on one side only of the model file and the
  checkpoint (its local config.json, or the model option of its hub id): the comparison read a field only
  when both sides had it, so a dense model file on an MoE checkpoint compared nothing of the experts
  (launch/checks/hf_config._sections_differ); the hub option's fix pointed at a field of the section and
  did not validate;
- a head size against a config.json that leaves it to HF's default (no head_dim: Llama 3.1's, Qwen2.5's):
  HF takes hidden_size / num_attention_heads, the comparison took nothing (launch/checks/hf_config._head_dim);
- an SGLang engine's TP that neither divides nor is a multiple of the model's key-value heads (48 heads
  in 6 groups at TP 4): SGLang asserts one or the other when the server loads the model; only the query
  heads were checked (launch/config/model_size.sglang_tp_problem, read by the rollout engines' rule, the
  eval server's and its default TP).

Each refusal names its key and a first fix that validates; the valid settings next to them are accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from launch.checks.hf_config import as_hf_config
from launch.checks.resolve import resolve
from launch.config.errors import Problem
from launch.config.schema import MegatronArch
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"
# DeepSeek-V3 on a layout whose memory fits (16 nodes, TP 4, EP 128), single-layer recompute chunks.
V3 = ["model=deepseek_v3", "hardware.nodes=16", "hardware.tensor_parallel=4", "executor=slurm"]
V3 += ["hardware.expert_parallel=128", "hardware.recompute.num_layers=1"]
DENSE_PP4 = ["hardware.pipeline_parallel=4", "hardware.tensor_parallel=1", "hardware.sequence_parallel=false"]
A = "model.architecture"


_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _refused(overrides: list[str], says: str) -> Problem:
    """The error saying `says`; its first fix, applied, validates."""
    found = errors(overrides)
    named = [e for e in found if says in e.message]
    assert named, f"not refused saying {says!r}: {[(e.key, e.message) for e in found]}"
    assert errors(fixed(overrides, named[0])) == []
    return named[0]


# ------------------------------------------------------------------ a uniform recompute's chunk of layers

CHUNKS = "a uniform recompute walks each pipeline block's layers"
CHUNK_REFUSED = [
    # 36 layers, chunks of 5: the eighth chunk reads layers 35..39
    (
        "chunk_not_dividing_the_layers",
        [S1, "hardware.recompute.num_layers=5"],
        "hardware.recompute.num_layers",
    ),
    # more than the block holds
    ("chunk_above_the_layers", [S1, "hardware.recompute.num_layers=40"], "hardware.recompute.num_layers"),
    # 36 layers over 4 stages are 9 a stage: the profile's chunk of 2 breaks once the pipeline is set
    ("pipeline_leaving_odd_stages", [S1, *DENSE_PP4], "hardware.pipeline_parallel"),
    # an uneven pipeline: 16 layers on the last stage, 20 on the first; chunks of 8 divide neither
    (
        "uneven_pipeline_blocks",
        [
            S1,
            *DENSE_PP4[1:],
            "hardware.pipeline_parallel=2",
            "hardware.recompute.num_layers=8",
            f"{A}.extra_args=[--decoder-last-pipeline-num-layers,'16']",
        ],
        "hardware.recompute.num_layers",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "key"), [c[1:] for c in CHUNK_REFUSED], ids=[c[0] for c in CHUNK_REFUSED]
)
def test_a_uniform_chunk_that_does_not_divide_a_block_is_refused(overrides: list[str], key: str) -> None:
    problem = _refused(overrides, CHUNKS)
    assert problem.key == key
    assert "recompute.method=block" in problem.fix


def test_the_chunk_fix_divides_every_block() -> None:
    problem = _refused(CHUNK_REFUSED[3][1], CHUNKS)
    assert problem.fix.startswith("set hardware.recompute.num_layers=4 ")  # gcd(20, 16) = 4, below 8


def test_a_proposed_pipeline_size_leaves_blocks_the_chunk_divides() -> None:
    # 36 layers over PP 8 do not split; PP 4 would leave 9-layer stages to the profile's chunk of 2
    problem = _refused(
        [S1, *DENSE_PP4[1:], "hardware.pipeline_parallel=8"], "not divisible by pipeline_parallel 8"
    )
    assert problem.fix.startswith("set hardware.pipeline_parallel=2 ")


CHUNK_ACCEPTED = [
    ("chunk_dividing_a_pipeline_stage", [S1, *DENSE_PP4, "hardware.recompute.num_layers=3"]),
    (
        "block_method_of_any_count",
        [S1, "hardware.recompute.num_layers=40", "hardware.recompute.method=block"],
    ),
    (
        "selective_recompute",
        [S1, "hardware.recompute.granularity=selective", "hardware.recompute.num_layers=5"],
    ),
]


@pytest.mark.parametrize("overrides", [c[1] for c in CHUNK_ACCEPTED], ids=[c[0] for c in CHUNK_ACCEPTED])
def test_a_recompute_that_fits_its_blocks_is_accepted(overrides: list[str]) -> None:
    assert [e for e in errors(overrides) if CHUNKS in e.message] == []


# ------------------------------------------------------- a section of the architecture on one side only

EXPERTS = "{num_experts:8,moe_ffn_hidden_size:1024,moe_router_topk:2}"
SECTION_REFUSED = [
    ("experts_on_a_dense_hub_model", [S1, f"+{A}.moe={EXPERTS}"], f"{A}.moe", "=null"),
    (
        "latent_attention_on_a_dense_hub_model",
        [S1, f"+{A}.mla={{kv_lora_rank:512,qk_head_dim:128,qk_pos_emb_head_dim:64,v_head_dim:128}}"],
        f"{A}.mla",
        "=null",
    ),
    ("no_experts_on_deepseek_v3", [S1, *V3, f"{A}.moe=null"], f"{A}.moe", "moe_layer_freq:[0,0,0,1,"),
]


@pytest.mark.parametrize(
    ("overrides", "key", "fix"), [c[1:] for c in SECTION_REFUSED], ids=[c[0] for c in SECTION_REFUSED]
)
def test_a_section_the_hub_checkpoint_lacks_or_has_is_refused(
    overrides: list[str], key: str, fix: str
) -> None:
    found = errors(overrides)
    named = [e for e in found if e.key.startswith(key)]
    assert [e.key for e in named] == [key], [(e.key, e.message) for e in found]
    assert fix in named[0].fix
    assert errors(fixed(overrides, named[0])) == []


@pytest.fixture(scope="module")
def moe_checkpoint(_in_tmp: Path) -> Path:
    """A local checkpoint dir whose config.json is Qwen3-4B-Instruct-2507's with 8 routed experts."""
    shipped = Path(__file__).parents[2] / "conf/model/qwen3_4b_instruct_2507.yaml"
    option = yaml.safe_load(shipped.read_text())
    config = as_hf_config(MegatronArch.model_validate(option["architecture"]))
    config |= {"num_experts": 8, "moe_intermediate_size": 768, "num_experts_per_tok": 2}
    directory = _in_tmp / "moe-ckpt"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_a_dense_model_file_on_a_local_moe_checkpoint_is_refused(moe_checkpoint: Path) -> None:
    overrides = [S1, f"model.hf_checkpoint={moe_checkpoint}"]
    problem = _refused(overrides, "num_experts 8")
    assert problem.key == "model.hf_checkpoint"
    assert f"{A}.moe={{moe_ffn_hidden_size:768,moe_router_topk:2,num_experts:8}}" in problem.fix


def test_the_moe_model_file_of_that_checkpoint_is_accepted(moe_checkpoint: Path) -> None:
    overrides = [S1, f"model.hf_checkpoint={moe_checkpoint}", f"+{A}.moe={EXPERTS.replace('1024', '768')}"]
    resolve(overrides)


# --------------------------------------------------- an SGLang engine's TP against the key-value heads


@pytest.fixture(scope="module")
def six_groups(_in_tmp: Path) -> tuple[str, ...]:
    """A config dir with a user's model file: Qwen3-8B's shape with 48 heads in 6 key-value groups."""
    shipped = yaml.safe_load((Path(__file__).parents[2] / "conf/model/qwen3_8b.yaml").read_text())
    shipped |= {"name": "six", "hf_id": "my-org/Six-8B"}
    shipped["architecture"] |= {"num_attention_heads": 48, "num_query_groups": 6}
    (_in_tmp / "own" / "model").mkdir(parents=True)
    (_in_tmp / "own" / "model" / "six.yaml").write_text(yaml.safe_dump(shipped))
    return (str(_in_tmp / "own"),)


KV_REFUSED = [
    ("rollout_engines", "hardware.gpus_per_engine=4", "hardware.gpus_per_engine"),
    ("eval_server", "eval.server.tp=4", "eval.server.tp"),
]


@pytest.mark.parametrize(("override", "key"), [c[1:] for c in KV_REFUSED], ids=[c[0] for c in KV_REFUSED])
def test_an_engine_tp_that_splits_no_key_value_head_is_refused(
    override: str, key: str, six_groups: tuple[str, ...]
) -> None:
    overrides = [S1, "model=six", override]
    found = [e for e in errors(overrides, six_groups) if e.key == key]
    assert found and "the 6 key-value heads" in found[0].message, found
    assert errors(fixed(overrides, found[0]), six_groups) == []


def test_engines_that_split_or_replicate_key_value_heads_are_accepted(six_groups: tuple[str, ...]) -> None:
    # 2 GPUs split 6 groups, 6 take one each; GLM-4-9B's 2 groups are replicated on 4 GPUs
    assert errors([S1, "model=six", "hardware.gpus_per_engine=2", "eval.server.tp=6"], six_groups) == []
    assert errors([S1, "model=glm4_9b", "hardware.gpus_per_engine=4", "eval.server.tp=8"]) == []


# ---------------------------------------------- a head size the checkpoint's config.json leaves unwritten


@pytest.fixture(scope="module")
def llama_without_head_dim(_in_tmp: Path) -> Path:
    """A local Llama-3.1-8B-Instruct dir whose config.json, as Meta's, writes no head_dim."""
    shipped = yaml.safe_load((Path(__file__).parents[2] / "conf/model/llama3_1_8b_instruct.yaml").read_text())
    config = as_hf_config(MegatronArch.model_validate(shipped["architecture"]))
    del config["head_dim"]
    directory = _in_tmp / "llama"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_a_head_size_against_an_unwritten_head_dim_is_refused(llama_without_head_dim: Path) -> None:
    local = [S1, "model=llama3_1_8b_instruct", f"model.hf_checkpoint={llama_without_head_dim}"]
    problem = _refused([*local, f"{A}.kv_channels=96"], "head_dim (not written")
    assert problem.key == f"{A}.kv_channels" and problem.fix.startswith(f"set {A}.kv_channels=128")
    assert errors(local) == []  # its own head size, hidden 4096 / 32 heads, is accepted
