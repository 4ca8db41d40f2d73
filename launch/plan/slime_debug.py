"""The slime command of a debug train stage (T3RL's scripts/debug/debug_rollout.sh and debug_training.sh).

- rollout_only: slime's `--debug-rollout-only` generates `debug_num_rollout` rollouts with the run's
  generate hook and saves each as `<stage dir>/rollouts/rollout_data_{rollout_id}.pt`; nothing trains.
  As T3RL's script: TP 1, no recompute, no dynamic batch, only the generate and rollout-log hooks (plus
  the runtime config they read), no in-loop eval. slime then sizes the job by the rollout GPUs alone.
- train_only: slime's `--debug-train-only` trains on saved rollouts (`--load-debug-rollout-data`,
  `--disable-rollout-global-dataset`), saving every step; the stage's training topology and PERF args
  as in a normal run, and no SGLang or hook args.
"""

from __future__ import annotations

from collections.abc import Mapping

from launch.config.schema import HardwareConfig, RunConfig, TrainStage
from launch.plan.pass_through import check_groups
from launch.plan.slime_args import (
    HOOKS,
    SlimeJob,
    TrainPaths,
    check_advantage_hook,
    ckpt_args,
    grpo_args,
    job_env,
    launcher_args,
    merge_hardware,
    misc_args,
    model_args,
    optimizer_args,
    perf_args,
    rollout_args,
    sglang_args,
    tracking_args,
)
from launch.plan.slime_constraints import check_constraints
from launch.plan.slime_options import check_argv, known_options

ROLLOUT_FILE = "rollout_data_{rollout_id}.pt"


def rollout_only_hardware(hw: HardwareConfig) -> HardwareConfig:
    """T3RL's debug rollout topology: TP 1 (no SP), no recompute, no dynamic batch."""
    return hw.model_copy(
        update={
            "tensor_parallel": 1,
            "sequence_parallel": False,
            "context_parallel": 1,
            "pipeline_parallel": 1,
            "recompute": None,
            "recompute_loss_function": False,
            "dynamic_batch": False,
            "max_tokens_per_gpu": None,
        }
    )


def _with_num_rollout(argv: list[str], num_rollout: int) -> list[str]:
    """The rollout group with `--num-rollout N` in place of the curriculum's length (epochs need the
    global dataset, which a debug stage does not use)."""
    return [*_without(argv, "--num-rollout", "--num-epoch"), "--num-rollout", str(num_rollout)]


def _without(argv: list[str], *flags: str) -> list[str]:
    """`argv` minus each flag in `flags` together with its values (nargs from the option table)."""
    table = known_options()
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in flags:
            nargs = table[argv[i]].nargs
            i += 1 + (nargs if isinstance(nargs, int) else 1)
            continue
        out.append(argv[i])
        i += 1
    return out


def build_debug_job(
    run: RunConfig,
    stage_name: str,
    stage: TrainStage,
    paths: TrainPaths,
    rollouts: str,
    *,
    address: str | None,
    run_id: str,
    environ: Mapping[str, str],
) -> SlimeJob:
    """The checked slime job of a debug train stage; `rollouts` is the directory of the .pt files
    (written by rollout_only, read by train_only)."""
    key = f"stages.{stage_name}"
    hw = merge_hardware(run.hardware, stage.hardware, f"{key}.hardware")
    cur = stage.curriculum
    pattern = f"{rollouts}/{ROLLOUT_FILE}"
    groups: dict[str, list[str]] = {}
    if stage.debug == "rollout_only":
        hw = rollout_only_hardware(hw)
        groups["launcher"] = launcher_args(hw, sft=False)
        groups["model"] = model_args(run.model.architecture)
        groups["ckpt"] = ckpt_args(paths, cur.model_copy(update={"save_interval": None}))
        groups["rollout"] = _with_num_rollout(rollout_args(paths, cur, run.seed), stage.debug_num_rollout)
        groups["optimizer"] = optimizer_args(cur)
        # Nothing trains: no advantage hook.
        groups["grpo"] = _without(grpo_args(cur), "--custom-advantage-function-path")
        groups["tracking"] = tracking_args(run.tracking, run.name, run_id, paths.stage_dir, environ)
        groups["perf"] = perf_args(hw)
        groups["sglang"] = sglang_args(hw)
        groups["misc"] = misc_args(hw, run.seed)
        groups["custom"] = [
            "--custom-generate-function-path", HOOKS["generate"],
            "--custom-rollout-log-function-path", HOOKS["rollout_log"],
            "--custom-config-path", paths.runtime_config,
        ]  # fmt: skip
        groups["debug"] = ["--debug-rollout-only", "--save-debug-rollout-data", pattern]
        # slime derives the actor from the rollout GPUs and turns colocation off in this mode.
        gpus = hw.world_size if hw.colocate else (hw.rollout_gpus or hw.world_size)
    else:
        groups["launcher"] = launcher_args(hw, sft=True)
        groups["model"] = model_args(run.model.architecture)
        groups["ckpt"] = ckpt_args(paths, cur.model_copy(update={"save_interval": 1}))
        rollout = _with_num_rollout(rollout_args(paths, cur, run.seed), stage.debug_num_rollout)
        groups["rollout"] = _without(rollout, "--prompt-data", "--rollout-shuffle")
        groups["optimizer"] = optimizer_args(cur)
        groups["grpo"] = grpo_args(cur)
        groups["tracking"] = tracking_args(run.tracking, run.name, run_id, paths.stage_dir, environ)
        groups["perf"] = perf_args(hw)
        groups["misc"] = misc_args(hw, run.seed)
        # The TIS/mismatch hook (GRPO group) reads its settings from the runtime config.
        groups["custom"] = ["--custom-config-path", paths.runtime_config]
        groups["debug"] = [
            "--debug-train-only", "--load-debug-rollout-data", pattern, "--disable-rollout-global-dataset",
        ]  # fmt: skip
        gpus = hw.world_size
    argv = [token for group in groups.values() for token in group]
    check_groups(groups, run.model.architecture.extra_args, key)
    check_argv(argv, key=key)
    check_constraints(
        argv, run.model.architecture.extra_args, key=key, extra_key="model.architecture.extra_args"
    )
    check_advantage_hook(argv, cur, run.model.architecture.extra_args)
    return SlimeJob(
        script=f"{paths.slime_root}/train.py",
        argv=tuple(argv),
        env_vars=job_env(run, hw, paths, False, environ),
        address=address,
        python=paths.python,
        gpus=gpus,
        nodes=max(1, -(-gpus // hw.gpus_per_node)),
        groups={name: tuple(tokens) for name, tokens in groups.items()},
    )
