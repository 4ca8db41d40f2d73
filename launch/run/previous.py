"""A train stage of another run to continue from: `init_from: run:<run dir>:<stage>`.

The reference names a run directory and one of its train stages. It is usable when the run exists,
the stage finished (status `succeeded`, or `skipped` over a complete output), its recorded checkpoint
holds a Megatron checkpoint (`latest_checkpointed_iteration.txt`), and the run trained the same model.
The new train stage then loads those weights as its reference (`--ref-load`) exactly as a train stage
continues from an earlier stage of its own run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from launch.run.rundir import RunDir, RunDirError, read_json

PREFIX = "run:"
FINISHED = ("succeeded", "skipped")


@dataclass(frozen=True)
class RunStageRef:
    """`run:<run dir>:<stage>` parsed (the run dir may itself contain ':')."""

    run_dir: Path
    stage: str

    @classmethod
    def parse(cls, value: str | None) -> RunStageRef | None:
        """The reference, or None when `value` names a stage of this run (or nothing)."""
        if value is None or not value.startswith(PREFIX):
            return None
        run_dir, sep, stage = value[len(PREFIX) :].rpartition(":")
        if not sep or not run_dir or not stage:
            raise ValueError(f"'{value}' is not of the form run:<run dir>:<stage>")
        return cls(Path(run_dir).expanduser(), stage)

    def __str__(self) -> str:
        return f"{PREFIX}{self.run_dir}:{self.stage}"


class PreviousRunError(Exception):
    """The referenced run or stage cannot be continued from; `fix` says what would make it usable."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def continued_checkpoint(ref: RunStageRef, model_name: str) -> Path:
    """The Megatron checkpoint dir of the referenced finished train stage (PreviousRunError if unusable)."""
    run = RunDir(ref.run_dir.resolve())
    if not run.state_file.is_file():
        raise PreviousRunError(
            f"{ref.run_dir} is not a t3rl run directory (no state.json)",
            "point it at a directory made by `t3rl run` (see `t3rl runs`)",
        )
    try:
        state = run.load_state()
        outputs = read_json(run.stage_dir(ref.stage) / "outputs.json") if ref.stage in state.stages else {}
    except RunDirError as err:
        raise PreviousRunError(str(err), "repair the run directory or continue from another run") from None
    record = state.stages.get(ref.stage)
    if record is None:
        raise PreviousRunError(
            f"run {ref.run_dir} has no stage '{ref.stage}' that ever ran",
            f"use one of its stages: {', '.join(state.stages) or '(none ran)'}",
        )
    if record.status not in FINISHED:
        raise PreviousRunError(
            f"stage '{ref.stage}' of {ref.run_dir} is {record.status}, not finished",
            f"finish it first: t3rl run --run-dir {ref.run_dir}",
        )
    if not (isinstance(outputs, dict) and outputs.get("checkpoint")):
        raise PreviousRunError(
            f"stage '{ref.stage}' of {ref.run_dir} is not a train stage (it records no checkpoint)",
            "name a train stage of that run",
        )
    # Where the plan points --ref-load (also right when the run directory was moved since).
    checkpoint = checkpoint_dir(run.path, ref.stage)
    if not (checkpoint / "latest_checkpointed_iteration.txt").is_file():
        raise PreviousRunError(
            f"the checkpoint of stage '{ref.stage}' ({checkpoint}) has no latest_checkpointed_iteration.txt",
            "continue from a run whose checkpoint is still on disk",
        )
    trained = _model_name(run.path / "config.yaml")
    if trained is not None and trained != model_name:
        raise PreviousRunError(
            f"run {ref.run_dir} trained model '{trained}', this run is model '{model_name}'",
            f"set model={trained}",
        )
    return checkpoint


def checkpoint_dir(run_dir: Path, stage: str) -> Path:
    """Where a train stage of a run saves its Megatron checkpoints (the train builder's layout)."""
    return run_dir / "stages" / stage / "checkpoint"


def _model_name(config: Path) -> str | None:
    try:
        data = yaml.safe_load(config.read_text())
    except (OSError, yaml.YAMLError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model.get("name") if isinstance(model, dict) else None
