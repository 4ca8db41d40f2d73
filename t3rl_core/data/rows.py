"""Reading dataset rows (JSONL) with errors that name the file and line, never a traceback.

A row of a prepared split is a JSON object with `prompt` (the opening messages: a non-empty list of
objects with a string `role`) and optionally `metadata` (an object); envs read further keys of
their own. `read_rows` checks that much for every line before any row is used, so a truncated file,
a line of garbage or a row of another format stops the stage at once with `DataError`, whose text is
`<file>:<line>: <what is wrong>`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.data.jsonl_lines import NotJsonl, numbered_lines


class DataError(ValueError):
    """A dataset file that cannot be used as it is; str() names the file and line."""

    def __init__(self, path: Path, line: int | None, problem: str) -> None:
        self.path, self.line, self.problem = path, line, problem
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")


def read_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) per non-blank line (gzip and a UTF-8 BOM read as `numbered_lines`
    reads them); DataError for a missing file, one JSON document over several lines, or bad JSON."""
    try:
        lines = numbered_lines(path)
    except NotJsonl as err:
        raise DataError(path, None, str(err).removeprefix(f"{path} ")) from None
    except OSError as err:
        raise DataError(path, None, f"cannot be read ({err.strerror or err})") from None
    # Decoded line by line: a decoding error then names its own line, not a buffer's.
    for number, raw in lines:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise DataError(path, number, f"not UTF-8 text ({err.reason} at byte {err.start})") from None
        try:
            yield number, outside_json.loads(line, "the row")
        except outside_json.OutsideJsonError as err:
            raise DataError(path, number, str(err)) from None
        except json.JSONDecodeError as err:
            raise DataError(path, number, f"not JSON: {err.msg} (column {err.colno})") from None


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a prepared split, each checked (see the module docstring)."""
    rows = []
    for number, row in read_jsonl(path):
        problem = row_problem(row)
        if problem is not None:
            raise DataError(path, number, problem)
        rows.append(row)
    return rows


def row_problem(row: Any) -> str | None:
    """What makes `row` unusable as a dataset row, or None."""
    if not isinstance(row, Mapping):
        return f"a row must be a JSON object, got {type(row).__name__}"
    prompt = row.get("prompt")
    if prompt is None:
        return f"no 'prompt' (keys: {', '.join(sorted(map(str, row))) or 'none'})"
    if not isinstance(prompt, list) or not prompt:
        return "'prompt' must be a non-empty list of messages"
    for i, message in enumerate(prompt):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            return f"prompt[{i}] is not a message (an object with a string 'role')"
    if "metadata" in row and row["metadata"] is not None and not isinstance(row["metadata"], Mapping):
        return "'metadata' must be an object"
    return None
