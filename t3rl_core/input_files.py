"""A dataset file a user gives an env, as the env declares it: where it is set, what each row needs.

Envs that read user files (ReTool's problems and SFT conversations, ToolRL's parquet splits) declare
them with `EnvConfig.input_files()`; the launcher probes each one before anything runs (its first rows
against these columns), and the prepare_data stage requires it where it runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputFile:
    """One user-given dataset file of an env."""

    # Dotted key under `env` that sets the path ("data.source").
    key: str
    path: str
    # What the file is, for messages ("ReTool problems").
    what: str
    # Columns every row must have, with the env key that names each column when the user can choose
    # it ("prompt" ← "data.question_key"), else None.
    columns: dict[str, str | None]
    # Columns that hold a list (chat messages).
    list_columns: tuple[str, ...] = ()
