"""The working directory every CLI test runs in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.no_slime import cli_workdir


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_workdir(tmp_path / "work", monkeypatch)
