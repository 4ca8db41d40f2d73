"""The small JSON record a remote executor keeps per stage (which cluster job the stage is)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from launch.files import write_record_json
from t3rl_core import outside_json

T = TypeVar("T")


def read_record(path: Path, cls: type[T]) -> T | None:
    """The record at `path` as `cls`, or None when the stage never submitted anything."""
    return cls(**outside_json.read_file(path)) if path.exists() else None


def write_record(path: Path, record: Any) -> None:
    """Write a dataclass record atomically and durably (`launch.files.write_record`): a crash leaves the
    old record or the new one, and a power loss never the job's record older than the state's."""
    write_record_json(path, asdict(record))
