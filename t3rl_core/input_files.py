"""A dataset file a user gives an env, as the env declares it: where it is set, what each row needs.

Envs that read user files (ReTool's problems and SFT conversations, ToolRL's parquet splits) declare
them with `EnvConfig.input_files()`; the launcher probes each one before anything runs (its first rows
against these columns), and the prepare_data stage requires it where it runs.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.records import Record


class InputFile(Record):
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
    # The column that holds a row's prompt (its text, or a list of chat messages; None = none does), and
    # the prepared splits the rows go to: pre-flight measures the prompts against the length limits.
    prompt: str | None = None
    splits: tuple[str, ...] = ()


# Larger JSONL files are not counted at pre-flight (reading them takes seconds); they hold more rows
# than any batch anyway.
COUNT_LIMIT_BYTES = 64 << 20
# Rows of a file's head kept for the pre-flight probe of its columns.
HEAD_ROWS = 20


class Scan(Record):
    """What pre-flight reads of a dataset file, in one pass: its rows and its first rows."""

    # Non-blank JSONL lines or parquet rows; None when the file is too large to count quickly.
    rows: int | None
    # (line number, raw line) of the first HEAD_ROWS JSONL lines that are not blank, or ("row N", row)
    # of a parquet file's first rows.
    head: tuple[tuple[str, Any], ...]


def scan(path: str | Path) -> Scan:
    """Count `path`'s rows and keep its head, reading the file once however many checks ask (the split
    sizes and the column probe of one validate): a file is read again only once it has changed.
    Raises OSError or ValueError when it cannot be read."""
    file = Path(path).expanduser()
    stat = file.stat()
    counted = stat.st_size <= COUNT_LIMIT_BYTES
    return _scan(str(file.resolve()), (stat.st_ino, stat.st_size, stat.st_mtime_ns), counted)


@functools.lru_cache(maxsize=16)
def _scan(file: str, version: tuple[int, int, int], counted: bool) -> Scan:
    if file.endswith(".parquet"):
        import pyarrow.parquet as pq  # lazy: pyarrow, only when a parquet file is read

        table = pq.ParquetFile(file)
        batch = next(table.iter_batches(batch_size=HEAD_ROWS), None)
        rows = batch.to_pylist() if batch is not None else []
        return Scan(int(table.metadata.num_rows), tuple((f"row {n}", row) for n, row in enumerate(rows, 1)))
    head: list[tuple[str, bytes]] = []
    count = 0
    with open(file, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            count += 1
            if number <= HEAD_ROWS:
                head.append((str(number), raw))
            elif not counted:
                break
    return Scan(count if counted else None, tuple(head))


def count_rows(path: str | Path) -> int | None:
    """Rows of a local JSONL (non-blank lines) or parquet file (its footer); None when the file is
    missing, unreadable, too large to count quickly, or not rows at all: a text file's lines are counted
    as rows only when its first lines are JSON (a README's lines are no rows of a split)."""
    if not Path(path).expanduser().is_file():
        return None
    try:
        found = scan(path)
        for _, row in found.head:
            if isinstance(row, bytes):
                outside_json.loads(row, "a row")
    except (OSError, ValueError):  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None
    return found.rows
