"""What `t3rl eval` says when the checkpoint an SGLang eval would serve is not there: `--serve-checkpoint`
given a dir that is missing, a run dir, a stage dir or a torch_dist checkpoint, and `--stage` of an eval
stage that evaluates another stage's converted checkpoint, given no server. Each answer names the HF
dirs the runs already hold (a run's converted checkpoint is `<run dir>/stages/<stage>/hf`,
launch.plan.builders.convert), else the command that writes one."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from launch.config.schema import EvalStage

if TYPE_CHECKING:
    from launch.config.schema import RunConfig
    from t3rl_core.eval.config import EvalConfig

# Megatron's torch_dist checkpoints (a train stage's, or the HF → torch_dist conversion) hold this file.
TORCH_DIST_MARK = "latest_checkpointed_iteration.txt"


def hf_dirs_below(path: Path) -> list[Path]:
    """The HF checkpoints (dirs with a config.json) a run's layout puts below `path`: a stage dir's
    `hf`, a run dir's `stages/*/hf`, an experiment dir's `*/stages/*/hf`; oldest run first."""
    patterns = ("hf", "stages/*/hf", "*/stages/*/hf")
    return sorted({p.parent for pattern in patterns for p in path.glob(f"{pattern}/config.json")})


def not_a_checkpoint(path: Path) -> str:
    """Why `--serve-checkpoint path` is no HF dir SGLang can serve, and the smallest fix."""
    shown = shlex.quote(str(path))
    if not path.exists():
        what = f"{shown} does not exist"
    elif not path.is_dir():
        what = f"{shown} is a file; SGLang serves a directory"
    else:
        what = f"{shown} holds no HF config.json"
    found = hf_dirs_below(path) if path.is_dir() else []
    if found:
        listed = ", ".join(shlex.quote(str(p)) for p in found)
        return f"{what}; below it: {listed}. Give one: --serve-checkpoint {shlex.quote(str(found[-1]))}"
    if (path / TORCH_DIST_MARK).is_file():
        return (
            f"{what}: it is a torch_dist checkpoint (Megatron's), and SGLang serves HF. A "
            "convert_torch_dist_to_hf stage converts it: give --serve-checkpoint "
            "<run dir>/stages/<that stage>/hf"
        )
    return (
        f"{what}. --serve-checkpoint takes an HF model dir (config.json beside the weights), e.g. a run's "
        "converted checkpoint runs/<name>/<timestamp>/stages/<convert stage>/hf, which `t3rl run` writes"
    )


def check_stage_checkpoint(
    run: RunConfig,
    stage: str | None,
    config: EvalConfig,
    serve_checkpoint: Path | None,
    overrides: Sequence[str],
) -> None:
    """`--stage NAME` of an eval stage that evaluates another stage's converted checkpoint, with SGLang
    and neither a server nor a checkpoint to serve: refused naming that checkpoint where the runs hold
    it, else the run that writes it (before: only 'engine sglang has no server')."""
    spec = run.stages.get(stage) if stage is not None else None
    if not isinstance(spec, EvalStage) or spec.checkpoint is None:
        return
    if config.engine.name != "sglang" or getattr(config.engine, "url", None) or serve_checkpoint is not None:
        return
    runs = Path(run.paths.runs_dir) / run.name
    found = sorted(p.parent for p in runs.glob(f"*/stages/{spec.checkpoint}/hf/config.json"))
    what = (
        f"stage {stage} evaluates the HF checkpoint stage {spec.checkpoint} writes, and no server serves it"
    )
    if found:
        fix = f"serve the latest run's: --serve-checkpoint {shlex.quote(str(found[-1]))}"
    else:
        fix = (
            f"no run under {shlex.quote(str(runs))} has written it yet: `t3rl run {shlex.join(overrides)}` "
            f"does (into <run dir>/stages/{spec.checkpoint}/hf), or give --url of a server that serves it"
        )
    raise typer.BadParameter(f"{what}; {fix}", param_hint="--stage")
