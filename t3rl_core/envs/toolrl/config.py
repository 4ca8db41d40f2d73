"""Config of the ToolRL single-turn environment and its data conversion (pydantic only)."""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field

from t3rl_core.config import EnvConfig
from t3rl_core.fields import LocalPath, PathComponent
from t3rl_core.input_files import InputFile, count_rows
from t3rl_core.strict import StrictModel


class ToolRLDataConfig(StrictModel):
    """ToolRL's `dataset/rlla_4k` parquet files, converted to t3rl JSONL rows."""

    # Output split name → ToolRL parquet (columns data_source, prompt, reward_model, extra_info).
    # Relative paths are taken from the working directory of the prepare_data stage.
    splits: dict[PathComponent, LocalPath] = Field(min_length=1)
    # Put the tools listed in the system prompt into metadata.tools (OpenAI format). ToolRL renders
    # the prompt without `tools=`, because the system prompt already lists them; passing them to a
    # chat template as well would list them twice.
    tools_in_metadata: bool = False


class ToolRLEnvConfig(EnvConfig):
    """One model answer per task: `<think>…</think>` then `<tool_call>` JSON lines and/or `<response>`."""

    OUTCOME_FIELDS = frozenset({"response", "ground_truth", "answered"})

    SIZE_FIELDS = ("data.splits",)
    ACTION_FORMAT = "toolrl"

    name: Literal["toolrl_single_turn"] = "toolrl_single_turn"
    data: ToolRLDataConfig

    def split_names(self) -> list[str]:
        """The JSONL files prepare_data writes."""
        return list(self.data.splits)

    def demonstration_splits(self) -> frozenset[str]:
        """None: each rlla row is a prompt with its ground truth, not a conversation with its answer."""
        return frozenset()

    def input_files(self) -> list[InputFile]:
        """Each split's rlla parquet: ToolRL's four columns, the prompt a list of messages."""
        columns: dict[str, str | None] = dict.fromkeys(
            ("data_source", "prompt", "reward_model", "extra_info")
        )
        return [
            InputFile(
                f"data.splits.{name}",
                str(path),
                "ToolRL rlla parquet",
                columns,
                ("prompt",),
                prompt="prompt",
                splits=(name,),
            )
            for name, path in self.data.splits.items()
        ]

    def split_sizes(self) -> dict[str, int]:
        """Rows of each split's file, for the files that can be counted here (the others are unknown)."""
        counted = {name: count_rows(path) for name, path in self.data.splits.items()}
        return {name: rows for name, rows in counted.items() if rows is not None}

    def split_parts(self) -> dict[str, frozenset[str]]:
        """Each split is its parquet file, named by its real path: two names for one file (relative and
        absolute, through `./` or `..`, through a symlink) are one set of tasks."""
        return {name: frozenset({os.path.realpath(path)}) for name, path in self.data.splits.items()}
