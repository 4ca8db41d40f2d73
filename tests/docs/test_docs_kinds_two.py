"""Kinds of a generated reference that goes stale or says nothing, by what the generators read.

- The CLI reference is what `scripts/gen_cli_reference.py` writes whatever terminal runs it: a narrow
  terminal (COLUMNS) wrapped the usage lines, so the committed page failed its own staleness test on a
  developer's split pane and in a CI that sets COLUMNS.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"h83_{name}", REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cli_reference() -> ModuleType:
    return _script("gen_cli_reference")


@pytest.mark.parametrize("columns", ["20", "45", "61", "500"])
def test_the_cli_reference_does_not_depend_on_the_terminal_width(
    cli_reference: ModuleType, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)  # shutil.get_terminal_size reads it on every call
    monkeypatch.setenv("LINES", "10")
    assert cli_reference.page() == (REPO / "docs" / "reference" / "cli.md").read_text()
