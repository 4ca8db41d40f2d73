"""The example plugin package (examples/plugin) on sys.path, as `PYTHONPATH=examples/plugin` puts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from t3rl_core import registry
from tests.support.plugin_example import EXAMPLE


@pytest.fixture
def example_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    return EXAMPLE


@pytest.fixture
def fresh_entry_points():
    """Entry points are scanned once per process; a test that installs one rescans before and after."""
    registry.entry_points.cache_clear()
    registry._t3rl_entry_names.cache_clear()
    yield
    registry.entry_points.cache_clear()
    registry._t3rl_entry_names.cache_clear()
