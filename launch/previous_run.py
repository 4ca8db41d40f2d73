"""A train stage of another run to continue from: `init_from: run:<run dir>:<stage>`.

The reference names a run directory and one of its train stages. It is usable when the run exists,
the stage finished (status `succeeded`, or `skipped` over a complete output), its recorded checkpoint
holds a Megatron checkpoint (`latest_checkpointed_iteration.txt`), and the run trained the same model.
The new train stage then loads those weights as its reference (`--ref-load`) exactly as a train stage
continues from an earlier stage of its own run. The run directory is read here by its documented
layout (state.json, stages/<name>/outputs.json; see launch.run.rundir), since checks and plan come before the
run step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from t3rl_core import outside_json
from t3rl_core.records import Record
from t3rl_core.yaml_text import safe_load

PREFIX = "run:"
FINISHED = ("succeeded", "skipped")


class RunStageRef(Record):
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
    run_dir = ref.run_dir.resolve()
    state_file = run_dir / "state.json"
    if not state_file.is_file():
        raise PreviousRunError(
            f"{ref.run_dir} is not a t3rl run directory (no state.json)",
            "point it at a directory made by `t3rl run` (see `t3rl runs`)",
        )
    stages = _read(state_file).get("stages")
    if not isinstance(stages, dict):
        raise PreviousRunError(f"{state_file} is not a t3rl state file", "continue from another run")
    record = stages.get(ref.stage)
    if not isinstance(record, dict):
        raise PreviousRunError(
            f"run {ref.run_dir} has no stage '{ref.stage}' that ever ran",
            f"use one of its stages: {', '.join(stages) or '(none ran)'}",
        )
    status = record.get("status")
    if status not in FINISHED:
        raise PreviousRunError(
            f"stage '{ref.stage}' of {ref.run_dir} is {status}, not finished",
            f"finish it first: t3rl run --run-dir {ref.run_dir}",
        )
    outputs_file = run_dir / "stages" / ref.stage / "outputs.json"
    outputs = _read(outputs_file) if outputs_file.is_file() else {}
    if not outputs.get("checkpoint"):
        raise PreviousRunError(
            f"stage '{ref.stage}' of {ref.run_dir} is not a train stage (it records no checkpoint)",
            "name a train stage of that run",
        )
    # Where the plan points --ref-load (also right when the run directory was moved since).
    checkpoint = checkpoint_dir(run_dir, ref.stage)
    if not (checkpoint / "latest_checkpointed_iteration.txt").is_file():
        raise PreviousRunError(
            f"the checkpoint of stage '{ref.stage}' ({checkpoint}) has no latest_checkpointed_iteration.txt",
            "continue from a run whose checkpoint is still on disk",
        )
    trained = _model_name(run_dir / "config.yaml")
    if trained is not None and trained != model_name:
        raise PreviousRunError(
            f"run {ref.run_dir} trained model '{trained}', this run is model '{model_name}'",
            f"set model={trained}",
        )
    return checkpoint


def _read(path: Path) -> dict[str, Any]:
    try:
        data = outside_json.read_file(path)
    except (OSError, json.JSONDecodeError) as err:
        raise PreviousRunError(f"cannot read {path}: {err}", "repair the run directory") from None
    if not isinstance(data, dict):
        raise PreviousRunError(f"{path} is not a JSON object", "repair the run directory")
    return data


def checkpoint_dir(run_dir: Path, stage: str) -> Path:
    """Where a train stage of a run saves its Megatron checkpoints (the train builder's layout)."""
    return run_dir / "stages" / stage / "checkpoint"


def _model_name(config: Path) -> str | None:
    try:
        data = safe_load(config.read_text())
    except (OSError, yaml.YAMLError):
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model.get("name") if isinstance(model, dict) else None
