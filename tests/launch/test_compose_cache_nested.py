"""A composition cache file damaged into a header nested past Python's recursion is a cache miss (the
command composes again), as any other damaged entry: its header was read with json.loads, and the
RecursionError ended `t3rl plan` in Python's words. (The body is read only once the header's sha256
of it matches: what t3rl wrote.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.config.compose_cache import Entry


@pytest.mark.parametrize("header", ["[" * 100_000, '{"a": ' * 100_000, "[" * 300 + "]" * 300])
def test_a_nested_header_is_a_miss(tmp_path: Path, header: str) -> None:
    path = tmp_path / "entry.json"
    path.write_text(header + "\n{}")
    assert Entry(path, "digest").load() is None
