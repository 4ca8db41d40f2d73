"""Kinds of a generated reference that goes stale or says nothing, by what the generators read.

- The CLI reference is what `scripts/gen_cli_reference.py` writes whatever terminal runs it: a narrow
  terminal (COLUMNS) wrapped the usage lines, so the committed page failed its own staleness test on a
  developer's split pane and in a CI that sets COLUMNS.
- Every field row of the configuration reference has a description (issue 23 §2: every field with its
  type, default, domain and comment); 21 rows had none (services' host/port, the chat family's tokens,
  eval.engine, published results' values…). A field added without one stops the generator, naming the
  field and its model's source file, so the reference cannot be regenerated silent.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from launch.config.field_docs import field_doc
from t3rl_core.strict import StrictModel

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


@pytest.fixture(scope="module")
def config_reference() -> ModuleType:
    return _script("gen_config_reference")


def _field_rows(text: str) -> list[list[str]]:
    """The cells of every row of a page's field tables (key, type, default, description, set by)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if line.startswith("| `") and len(cells) == 5:
            rows.append(cells)
    return rows


def test_every_field_of_the_committed_reference_says_what_it_is() -> None:
    pages = sorted((REPO / "docs" / "reference" / "config").glob("*.md"))
    rows = [(page.name, cells) for page in pages for cells in _field_rows(page.read_text())]
    assert len(rows) > 300  # the tables were read
    silent = [f"{name}: {cells[0]}" for name, cells in rows if not cells[3]]
    assert not silent, silent


def test_a_field_without_a_comment_stops_the_generator(config_reference: ModuleType) -> None:
    class Bare(StrictModel):
        # Said.
        said: int = 1
        unsaid: int = 2

    rows = [config_reference.Row(f"x.{name}", field_doc(Bare, name)) for name in Bare.model_fields]
    with pytest.raises(config_reference.Undocumented, match=r"x\.unsaid \(.*Bare\.unsaid\).*comment block"):
        config_reference._table(config_reference.Section("x", rows), [], None)
    linked = config_reference.Row("x.unsaid", field_doc(Bare, "unsaid"), see="env")
    assert "See [`env`](env.md)" in "".join(
        config_reference._table(config_reference.Section("x", [linked]), [], None)
    )
