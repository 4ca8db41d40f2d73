"""A user's dataset file is read once per validate: the split sizes and the column probe share one scan."""

from __future__ import annotations

import builtins
import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from t3rl_core import input_files


def test_validate_opens_each_user_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problems = tmp_path / "problems.jsonl"
    problems.write_text(
        "".join(json.dumps({"prompt": f"{i}+1", "target": str(i + 1)}) + "\n" for i in range(40))
    )
    opened: Counter[str] = Counter()
    real_open = builtins.open

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | Path) and Path(file).name == problems.name:
            opened[Path(file).name] += 1
        return real_open(file, *args, **kwargs)

    input_files._scan.cache_clear()
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    with contextlib.suppress(ConfigError):  # other checks may refuse this config; only the reads matter
        resolve(["+experiment=retool", f"env.data.source={problems}"])
    assert opened[problems.name] == 1


def test_a_changed_file_is_read_again(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"a": 1}\n')
    assert input_files.scan(rows).rows == 1
    rows.write_text('{"a": 1}\n{"a": 2}\n')
    assert input_files.scan(rows).rows == 2
    assert [where for where, _ in input_files.scan(rows).head] == ["1", "2"]
