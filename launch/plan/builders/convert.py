"""Checkpoint conversions with slime's tools: HF → Megatron torch_dist, and a trained checkpoint → HF."""

from __future__ import annotations

import hashlib
import shlex

from launch.config.gpus import GPUS
from launch.config.model_size import param_counts
from launch.config.schema import ConvertHfToTorchDistStage, ConvertTorchDistToHfStage, RunConfig
from launch.plan.builders.builder import COMPLETE_MARKER, PlanBuilder
from launch.plan.slime_args import model_args
from launch.plan.slime_options import check_argv
from launch.plan.stages import LATEST_CHECKPOINT, Command, Stage, marked
from t3rl_core.counts import counted


def convert_hf_to_torch_dist(builder: PlanBuilder, name: str, _: ConvertHfToTorchDistStage) -> Stage:
    paths = builder.run.paths
    inputs, hf = builder.hf_source()
    # The cache is shared across runs, one directory per HF source and architecture flags: the same
    # model family loaded from another directory (e.g. stage 1's exported weights), or converted with
    # other flags, never reuses nor overwrites another conversion.
    arch = model_args(builder.run.model.architecture)
    source = hashlib.sha256("\0".join([hf, *arch]).encode()).hexdigest()[:12]
    out = f"{builder.abs(paths.checkpoints_dir)}/{builder.run.model.name}-{source}_torch_dist"
    marker = f"{out}/{COMPLETE_MARKER}"
    gpus = conversion_gpus(builder.run)
    tool = f"{paths.slime_root}/tools/convert_hf_to_torch_dist.py"
    launcher = [paths.python] if gpus == 1 else ["torchrun", "--nproc-per-node", str(gpus)]
    convert = (
        *launcher,
        tool,
        *arch,
        "--hf-checkpoint",
        hf,
        "--save",
        out,
    )
    # The tool parses with Megatron's parser: the same flags, types and choices as training.
    extra = builder.run.model.architecture.extra_args
    check_argv(
        convert[len(launcher) + 1 :],
        key=f"stages.{name}",
        extra=extra,
        extra_key="model.architecture.extra_args",
    )
    commands: tuple[Command, ...] = (
        f"rm -f {shlex.quote(marker)}",
        tuple(convert),
        f"touch {shlex.quote(marker)}",
    )
    return Stage(
        name,
        "convert_hf_to_torch_dist",
        commands,
        inputs=inputs,
        outputs={"torch_dist": out},
        **builder.slime_tool_env(),
        gpus=gpus,
        complete_when=(f"{out}/{LATEST_CHECKPOINT}", marker),
        verify={out: marked(LATEST_CHECKPOINT, COMPLETE_MARKER)},
        requires={**builder.slime_requires(tool), **builder.hf_requires(inputs, hf)},
        summary=f"{builder.run.model.name}: HF → torch_dist ({counted(gpus, 'GPU')})",
    )


def convert_torch_dist_to_hf(builder: PlanBuilder, name: str, spec: ConvertTorchDistToHfStage) -> Stage:
    paths = builder.run.paths
    builder.require_train(spec.source, f"stages.{name}.source")
    inputs, hf = builder.hf_source()
    inputs["checkpoint"] = builder.ref(spec.source, "checkpoint")
    save = builder.path(inputs["checkpoint"])
    out = f"{builder.stage_dir(name)}/hf"
    marker = f"{out}/{COMPLETE_MARKER}"
    tracker = shlex.quote(f"{save}/{LATEST_CHECKPOINT}")
    tool = f"{paths.slime_root}/tools/convert_torch_dist_to_hf.py"
    convert = shlex.join([paths.python, tool])
    convert += f' --input-dir "{save}/iter_$(printf %07d "$ITER")"'
    convert += " " + shlex.join(
        [
            "--output-dir",
            out,
            "--origin-hf-dir",
            hf,
            "--vocab-size",
            str(builder.run.model.architecture.vocab_size),
            "--force",
        ]
    )
    commands: tuple[Command, ...] = (f"ITER=$(cat {tracker})", convert, f"touch {shlex.quote(marker)}")
    return Stage(
        name,
        "convert_torch_dist_to_hf",
        commands,
        inputs=inputs,
        outputs={"hf": out},
        **builder.slime_tool_env(),
        complete_when=(marker,),
        verify={out: marked(COMPLETE_MARKER)},
        summary=f"last checkpoint of {spec.source} → HF",
        requires={**builder.slime_requires(tool), **builder.hf_requires(inputs, hf)},
    )


def conversion_gpus(run: RunConfig) -> int:
    """1 when the HF and Megatron copies of the weights fit one GPU, else every GPU of a node."""
    params = param_counts(run.model.architecture).total
    hw = run.hardware
    gpu = GPUS.get(hw.gpu_type)
    memory = (hw.gpu_memory_gib or (gpu.memory_gib[-1] if gpu else 80)) * 2**30
    # bf16 weights held twice (HF state dict + Megatron model) during the conversion.
    needed = 2 * 2 * params
    return 1 if needed <= 0.9 * memory else run.hardware.gpus_per_node
