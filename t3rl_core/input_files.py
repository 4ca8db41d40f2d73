"""A dataset file a user gives an env, as the env declares it: where it is set, what each row needs.

Envs that read user files (ReTool's problems and SFT conversations, ToolRL's parquet splits) declare
them with `EnvConfig.input_files()`; the launcher probes each one before anything runs (its first rows
against these columns), and the prepare_data stage requires it where it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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


# Larger JSONL files are not counted at pre-flight (reading them takes seconds); they hold more rows
# than any batch anyway.
COUNT_LIMIT_BYTES = 64 << 20


def count_rows(path: str | Path) -> int | None:
    """Rows of a local JSONL (non-blank lines) or parquet file (its footer); None when the file is
    missing, unreadable or too large to count quickly."""
    file = Path(path).expanduser()
    if not file.is_file():
        return None
    try:
        if file.suffix == ".parquet":
            import pyarrow.parquet as pq  # lazy: pyarrow, only when a parquet file is counted

            return int(pq.ParquetFile(file).metadata.num_rows)
        if file.stat().st_size > COUNT_LIMIT_BYTES:
            return None
        with file.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except (OSError, ValueError):
        return None
