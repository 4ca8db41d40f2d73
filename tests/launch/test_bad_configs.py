"""Bad configs through the real CLI: each exits 2, names the key, where it was set and the fix, and
nothing is launched or written (`t3rl plan` leaves the runs directory empty).

Each row: overrides, the key the error must name, a fragment of the fix, a fragment of the source
(the override or the config file that set the key). `{hf}` is a local HF checkpoint whose config.json
disagrees with the model's architecture; `{missing}` a directory that does not exist.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app

CASES = [
    # typos in keys, with and without '+', and in group options
    (
        "key-typo",
        ["hardware.tensor_paralel=4"],
        "hardware.tensor_paralel",
        "hardware.tensor_parallel",
        "override `hardware.tensor_paralel=4`",
    ),
    (
        "added-key-typo",
        ["+hardware.tensor_paralel=4"],
        "hardware.tensor_paralel",
        "hardware.tensor_parallel",
        "override `+hardware.tensor_paralel=4`",
    ),
    ("top-level-typo", ["modle=qwen3_8b"], "modle", "model", "override `modle=qwen3_8b`"),
    ("added-top-level-key", ["+seeds=3"], "seeds", "seed", "override `+seeds=3`"),
    ("option-typo", ["model=qwen3_8"], "model", "model=qwen3_8b", "override `model=qwen3_8`"),
    (
        "experiment-typo",
        ["+experiment=stage1_bfc"],
        "experiment",
        "experiment=stage1_bfcl",
        "override `+experiment=stage1_bfc`",
    ),
    (
        "stage-overlay-typo",
        ["+experiment=stage2_bfcl", "+stages.train.hardware.context_paralel=4"],
        "stages.train.hardware.context_paralel",
        "stages.train.hardware.context_parallel",
        "override `+stages.train.hardware.context_paralel=4`",
    ),
    (
        "stage-kind-typo",
        ["+experiment=stage1_bfcl", "stages.to_hf.kind=convert_torch_dist_to_hff"],
        "stages.to_hf.kind",
        "convert_torch_dist_to_hf",
        "override `stages.to_hf.kind",
    ),
    (
        "registry-name-typo",
        ["reward.name=progres"],
        "reward.name",
        "reward.name=progress",
        "override `reward.name=progres`",
    ),
    (
        "out-of-range",
        ["hardware.sglang_mem_fraction=1.5"],
        "hardware.sglang_mem_fraction",
        "<= 1",
        "override `hardware.sglang_mem_fraction=1.5`",
    ),
    (
        "sweep-in-single-run",
        ["reward=progress,binary"],
        "reward",
        "t3rl run -m",
        "override `reward=progress,binary`",
    ),
    # impossible topologies
    (
        "world-vs-tp",
        ["+experiment=stage1_bfcl", "hardware.tensor_parallel=3"],
        "hardware.tensor_parallel",
        "one of 1, 2, 4, 8",
        "override `hardware.tensor_parallel=3`",
    ),
    (
        "stage-cp-vs-world",
        ["+experiment=stage2_bfcl", "hardware=h100x2"],
        "hardware.tensor_parallel",  # the hardware swapped last; its fix shrinks the stage's CP
        "stages.train.hardware.context_parallel=1",
        "override `hardware=h100x2`",
    ),
    (
        "sp-without-tp",
        ["hardware.tensor_parallel=1"],
        "hardware.tensor_parallel",
        "sequence_parallel=false",
        "override `hardware.tensor_parallel=1`",
    ),
    (
        "query-groups-vs-tp",
        ["model=glm4_9b", "hardware.tensor_parallel=4"],
        "hardware.tensor_parallel",
        "one of 1, 2",
        "override `hardware.tensor_parallel=4`",
    ),
    (
        "layers-vs-pp",
        [
            "model=qwen2_5_7b_instruct",
            "hardware.tensor_parallel=1",
            "hardware.sequence_parallel=false",
            "hardware.pipeline_parallel=8",
        ],
        "hardware.pipeline_parallel",
        "one of 1, 2, 4",
        "override `hardware.pipeline_parallel=8`",
    ),
    (
        "ep-on-dense-model",
        ["hardware.expert_parallel=2"],
        "hardware.expert_parallel",
        "hardware.expert_parallel=1",
        "override `hardware.expert_parallel=2`",
    ),
    (
        "colocated-rollout-gpus",
        ["hardware.rollout_gpus=4"],
        "hardware.rollout_gpus",
        "hardware.rollout_gpus=null",
        "override `hardware.rollout_gpus=4`",
    ),
    (
        "async-without-rollout-gpus",
        ["hardware.colocate=false"],
        "hardware.colocate",  # the key typed: colocation switched off
        "multiple of gpus_per_engine",
        "override `hardware.colocate=false`",
    ),
    (
        "engines-vs-rollout-gpus",
        ["hardware.gpus_per_engine=3"],
        "hardware.gpus_per_engine",
        "one of 1, 2, 4, 8",
        "override `hardware.gpus_per_engine=3`",
    ),
    (
        "engine-spans-nodes",
        ["hardware=h100x2", "hardware.gpus_per_engine=4", "hardware.nodes=2", "executor=slurm"],
        "hardware.gpus_per_engine",
        "<= 2",
        "override `hardware.gpus_per_engine=4`",
    ),
    (
        "dynamic-batch-without-budget",
        ["hardware.max_tokens_per_gpu=null"],
        "hardware.max_tokens_per_gpu",
        "set hardware.max_tokens_per_gpu",
        "override `hardware.max_tokens_per_gpu=null`",
    ),
    (
        "cuda-device-connections",
        ["+hardware.env_vars.CUDA_DEVICE_MAX_CONNECTIONS='8'"],
        "hardware.env_vars.CUDA_DEVICE_MAX_CONNECTIONS",
        "remove hardware.env_vars.CUDA_DEVICE_MAX_CONNECTIONS",
        "override `+hardware.env_vars.CUDA_DEVICE_MAX_CONNECTIONS='8'`",
    ),
    (
        "env-var-not-a-string",
        ["+hardware.env_vars.NCCL_NVLS_ENABLE=0"],
        "hardware.env_vars.NCCL_NVLS_ENABLE",
        "NCCL_NVLS_ENABLE='0'",
        "override `+hardware.env_vars.NCCL_NVLS_ENABLE=0`",
    ),
    # batch sizes and schedule
    (
        "gbs-not-divisor",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.global_batch_size=500"],
        "stages.train.curriculum.global_batch_size",
        "divides 512",
        "override `stages.train.curriculum.global_batch_size=500`",
    ),
    (
        "gbs-vs-steps",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.num_steps_per_rollout=2"],
        "stages.train.curriculum.num_steps_per_rollout",
        "global_batch_size=256",
        "override `stages.train.curriculum.num_steps_per_rollout=2`",
    ),
    (
        "gbs-vs-data-parallel",
        [
            "+experiment=stage1_bfcl",
            "hardware=h200x8x2nodes",
            "hardware.tensor_parallel=1",
            "hardware.sequence_parallel=false",
            "stages.train.curriculum.rollout_batch_size=3",
            "stages.train.curriculum.n_samples_per_prompt=4",
            "stages.train.curriculum.global_batch_size=12",
            "stages.train.curriculum.dynamic_sampling_filter=null",
            "executor=slurm",
        ],
        "stages.train.curriculum.global_batch_size",
        "multiple of 16",
        "override `stages.train.curriculum.global_batch_size=12`",
    ),
    (
        "over-sampling",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.over_sampling_batch_size=16"],
        "stages.train.curriculum.over_sampling_batch_size",
        ">= 32",
        "override `stages.train.curriculum.over_sampling",
    ),
    (
        "no-schedule-length",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.num_rollout=null"],
        "stages.train.curriculum.num_rollout",
        "num_epoch",
        "override `stages.train.curriculum.num_rollout=null`",
    ),
    (
        "std-filter-single-sample",
        [
            "+experiment=stage1_bfcl",
            "stages.train.curriculum.n_samples_per_prompt=1",
            "stages.train.curriculum.global_batch_size=32",
        ],
        "stages.train.curriculum.n_samples_per_prompt",
        "n_samples_per_prompt=",
        "override `stages.train.curriculum.n_samples_per_prompt=1`",
    ),
    (
        "sft-with-samples",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.mode=sft"],
        "stages.train.curriculum.n_samples_per_prompt",
        "n_samples_per_prompt=1",
        "conf/curriculum/bfcl_stage1.yaml",
    ),
    # missing eval data
    (
        "eval-interval-without-split",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.eval_split=null"],
        "stages.train.curriculum.eval_split",
        "eval_interval=null",
        "override `stages.train.curriculum.eval_split=null`",
    ),
    (
        "unprepared-eval-split",
        ["eval.split=bfcl_tset"],
        "eval.split",
        "eval.split=bfcl_test",
        "override `eval.split=bfcl_tset`",
    ),
    (
        "unprepared-train-split",
        ["+experiment=stage1_bfcl", "stages.train.curriculum.train_split=bfcl_train_bas"],
        "stages.train.curriculum.train_split",
        "bfcl_train_base",
        "override `stages.train.curriculum.train_split",
    ),
    (
        "pass-k-over-samples",
        ["eval.pass_k=[1,4]"],
        "eval.pass_k",
        "eval.samples=4",
        "override `eval.pass_k=[1,4]`",
    ),
    # model bundle: parsers and checkpoint
    (
        "parser-wrong-family",
        ["model.parsers.tool_call_parser=llama3"],
        "model.parsers.tool_call_parser",
        "hermes, qwen25, qwen",
        "override `model.parsers.tool_call_parser=llama3`",
    ),
    (
        "parser-not-in-sglang",
        ["model.parsers.tool_call_parser=hermess"],
        "model.parsers.tool_call_parser",
        "tool_call_parser=hermes",
        "override `model.parsers.tool_call_parser=hermess`",
    ),
    (
        "reasoning-parser-wrong-family",
        ["model=qwen3_8b", "model.parsers.reasoning_parser=deepseek-r1"],
        "model.parsers.reasoning_parser",
        "qwen3, qwen3-thinking",
        "override `model.parsers.reasoning_parser=deepseek-r1`",
    ),
    (
        "unknown-family",
        ["model.family=qwen4"],
        "model.family",
        "model.family=qwen3",
        "override `model.family=qwen4`",
    ),
    (
        "hf-config-mismatch",
        ["model.hf_checkpoint={hf}"],
        "model.hf_checkpoint",
        "set model=qwen3_4b model.hf_checkpoint=",  # the option whose architecture the checkpoint has
        "override `model.hf_checkpoint=",
    ),
    (
        "moe-pattern-length",
        ["model=deepseek_v3", "model.architecture.num_layers=60", "model.architecture.ffn_hidden_size=18432"],
        "model.architecture.moe.moe_layer_freq",
        "60 entries",
        "conf/model/deepseek_v3.yaml",
    ),
    # pipeline references and inputs
    (
        "init-from-unknown-stage",
        ["+experiment=bfcl_env_tuning", "stages.stage2.init_from=stage3"],
        "stages.stage2.init_from",
        "stages.stage2.init_from=stage1",
        "override `stages.stage2.init_from=stage3`",
    ),
    (
        "source-runs-later",
        ["+experiment=stage1_bfcl", "stages.to_hf.source=eval"],
        "stages.to_hf.source",
        "stages.to_hf.source=train",
        "override `stages.to_hf.source=eval`",
    ),
    (
        "checkpoint-wrong-kind",
        ["+experiment=stage1_bfcl", "stages.eval.checkpoint=train"],
        "stages.eval.checkpoint",
        "stages.eval.checkpoint=to_hf",
        "override `stages.eval.checkpoint=train`",
    ),
    (
        # the deletion is the key changed last (round nine: it was blamed on the file's stages.train)
        "train-without-data",
        ["+experiment=stage1_bfcl", "~stages.data"],
        "stages.data",
        "drop `~stages.data`",
        "override `~stages.data`",
    ),
    (
        "next-experiment-typo",
        ["next_experiment=stage2_bfc"],
        "next_experiment",
        "next_experiment=stage2_bfcl",
        "override `next_experiment=stage2_bfc`",
    ),
    # interpolations and config dirs
    (
        "broken-interpolation",
        ["model.hf_checkpoint=${paths.model_dir}/x"],
        "model.hf_checkpoint",
        "interpolation",
        "override `model.hf_checkpoint=${paths.model_dir}/x`",
    ),
    (
        "missing-config-dir",
        ["--config-dir", "{missing}"],
        "--config-dir",
        "existing directory",
        "--config-dir",
    ),
    (
        "missing-search-path",
        ["hydra.searchpath=[file://{missing}]"],
        "hydra.searchpath",
        "existing config dirs",
        "override `hydra.searchpath=[file://",
    ),
]


@pytest.fixture
def hf_dir(tmp_path: Path) -> Path:
    """A Qwen3-4B (April release) config.json: rope_theta 1e6, where the 2507 model uses 5e6."""
    directory = tmp_path / "Qwen3-4B"
    directory.mkdir()
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "hidden_size": 2560,
        "intermediate_size": 9728,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
        "tie_word_embeddings": True,
    }
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def _args(args: list[str], hf_dir: Path, tmp_path: Path) -> list[str]:
    return [a.replace("{hf}", str(hf_dir)).replace("{missing}", str(tmp_path / "no-such-dir")) for a in args]


@pytest.mark.parametrize(
    ("overrides", "key", "fix", "source"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_config_exits_2_naming_key_source_and_fix(
    overrides: list[str], key: str, fix: str, source: str, hf_dir: Path, tmp_path: Path, monkeypatch
) -> None:
    runs = tmp_path / "runs"
    monkeypatch.setenv("T3RL_RUNS_DIR", str(runs))
    monkeypatch.setenv("T3RL_CHECKPOINTS_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("T3RL_PLANS_DIR", str(tmp_path / "plans"))
    args = _args(overrides, hf_dir, tmp_path)
    runner = CliRunner()

    result = runner.invoke(app, ["validate", *args])
    assert result.exit_code == 2, result.output
    errors = [block for block in result.output.split("\nerror ")[1:] if block.startswith(key + ":")] or [
        block for block in ("\n" + result.output).split("\nerror ")[1:] if block.startswith(key + ":")
    ]
    assert errors, f"no error names {key!r}:\n{result.output}"
    block = errors[0]
    assert f"set in: {source}" in block or source in block.split("set in:", 1)[1], result.output
    assert "fix:" in block and fix in block.split("fix:", 1)[1], result.output

    dry = [] if args[0] == "--config-dir" else ["executor=dry"]
    planned = runner.invoke(app, ["plan", *args, *dry])
    assert planned.exit_code == 2, planned.output
    assert not runs.exists() or not any(runs.iterdir()), "a bad config wrote a run directory"
    plans = tmp_path / "plans"
    assert not plans.exists() or not any(plans.rglob("*.*")), "a bad config wrote a plan"


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 25
    assert len({c[0] for c in CASES}) == len(CASES)
