"""launch.checks.hf_config: slime's HF config.json cross-check rules, on config.json files written here."""

from __future__ import annotations

import json
from pathlib import Path

from launch.checks.hf_config import compare, read_hf_config
from launch.checks.resolve import resolve


def _arch(model: str):
    return resolve([f"model={model}"]).run.model.architecture


def _write(tmp_path: Path, config: dict) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


QWEN3_8B = {
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,  # as Qwen3's config.json writes it (unwritten, HF's default is hidden / heads)
    "vocab_size": 151936,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000,
    "tie_word_embeddings": False,
}


def test_matching_config_has_no_mismatch(tmp_path: Path) -> None:
    assert compare(_arch("qwen3_8b"), read_hf_config(_write(tmp_path, QWEN3_8B))) == []


def test_each_compared_field_is_reported(tmp_path: Path) -> None:
    bad = {
        **QWEN3_8B,
        "hidden_size": 4000,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-5,
        "tie_word_embeddings": True,
        "vocab_size": 152064,
        "intermediate_size": 1,
    }
    fields = {m.field: m for m in compare(_arch("qwen3_8b"), read_hf_config(_write(tmp_path, bad)))}
    assert set(fields) == {
        "hidden_size",
        "num_layers",
        "num_query_groups",
        "norm_epsilon",
        "untie_embeddings_and_output_weights",
        "vocab_size",
        "ffn_hidden_size",
    }
    assert fields["untie_embeddings_and_output_weights"].expected is False
    assert fields["vocab_size"].relation == ">="


def test_larger_megatron_vocabulary_is_fine(tmp_path: Path) -> None:
    smaller = {**QWEN3_8B, "vocab_size": 151000}
    assert compare(_arch("qwen3_8b"), read_hf_config(_write(tmp_path, smaller))) == []


def test_rope_parameters_and_text_config(tmp_path: Path) -> None:
    text = {k: v for k, v in QWEN3_8B.items() if k != "rope_theta"}
    nested = {"text_config": {**text, "rope_parameters": {"rope_theta": 5000000, "rope_type": "default"}}}
    mismatches = compare(_arch("qwen3_8b"), read_hf_config(_write(tmp_path, nested)))
    assert [(m.field, m.theirs) for m in mismatches] == [("rotary_base", 5000000)]


def test_absent_fields_are_not_compared(tmp_path: Path) -> None:
    assert compare(_arch("qwen3_8b"), read_hf_config(_write(tmp_path, {"hidden_size": 4096}))) == []


def test_moe_skips_dense_ffn_only_without_dense_layers(tmp_path: Path) -> None:
    arch = _arch("deepseek_v3")
    hf = {
        "hidden_size": 7168,
        "intermediate_size": 1,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "kv_lora_rank": 512,  # multi-latent attention, as the architecture has it
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "vocab_size": 129280,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
    }
    # DeepSeek-V3's first three layers are dense, so the dense FFN size is compared (as slime does).
    assert [m.field for m in compare(arch, read_hf_config(_write(tmp_path, hf)))] == ["ffn_hidden_size"]
    all_moe = arch.model_copy(update={"moe": arch.moe.model_copy(update={"moe_layer_freq": 1})})
    assert compare(all_moe, read_hf_config(_write(tmp_path, hf))) == []
    hf["moe_intermediate_size"] = 1024
    assert [m.field for m in compare(all_moe, read_hf_config(_write(tmp_path, hf)))] == [
        "moe.moe_ffn_hidden_size"
    ]


def test_no_local_checkpoint_means_no_check(tmp_path: Path) -> None:
    assert read_hf_config(tmp_path / "absent") is None


def test_a_checkpoint_of_another_model_blames_the_checkpoint_and_proposes_its_model(tmp_path: Path) -> None:
    from launch.config.errors import ConfigError

    hf = _write(tmp_path, QWEN3_8B)
    try:
        resolve(["+experiment=stage1_bfcl", f"model.hf_checkpoint={hf}"])
    except ConfigError as error:
        problems = [p for p in error.problems if p.key.startswith("model.")]
    assert [p.key for p in problems] == ["model.hf_checkpoint"]
    assert problems[0].fix.startswith(f"set model=qwen3_8b model.hf_checkpoint={hf} ")
    resolve(["+experiment=stage1_bfcl", "model=qwen3_8b", f"model.hf_checkpoint={hf}"])


def test_an_architecture_field_changed_last_is_blamed_itself(tmp_path: Path) -> None:
    from launch.config.errors import ConfigError

    hf = _write(tmp_path, QWEN3_8B)
    try:
        resolve(["model=qwen3_8b", f"model.hf_checkpoint={hf}", "model.architecture.hidden_size=2048"])
    except ConfigError as error:
        keys = [p.key for p in error.problems]
    assert keys == ["model.architecture.hidden_size"]
