"""Every YAML text t3rl reads goes through `t3rl_core.yaml_text.safe_load`: libyaml's parser when PyYAML
has it, PyYAML's own again for a text libyaml refuses (so what loads and every error stay PyYAML's).
`yaml.safe_load` parses with the pure-Python reader, ~7 x slower: a search's `validate -m` read every
point's planned eval files with it (8 % of its CPU), as did every run record and stage config read."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from t3rl_core.yaml_text import safe_load
from tests.support import source_tree

ROOT = Path(__file__).resolve().parents[2]
# The one reader (the composition's loaders, libyaml-first classes of their own, pass theirs by name).
ALLOWED = {"t3rl_core/yaml_text.py"}


def _pure_python_reads(source: str, nodes: Sequence[ast.AST] | None = None) -> list[int]:
    """Lines calling `yaml.safe_load` / `yaml.full_load` / `yaml.unsafe_load`, or `yaml.load` with
    PyYAML's SafeLoader / FullLoader / Loader (or none). `nodes`: the source's, when parsed already
    (tests/support/source_tree.py)."""
    lines = []
    for node in ast.walk(ast.parse(source)) if nodes is None else nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner, name = node.func.value, node.func.attr
        if not (isinstance(owner, ast.Name) and owner.id == "yaml"):
            continue
        if name in ("safe_load", "full_load", "unsafe_load", "safe_load_all"):
            lines.append(node.lineno)
        elif name == "load":
            loader = next((k.value for k in node.keywords if k.arg == "Loader"), None)
            if loader is None or ast.unparse(loader) in ("yaml.SafeLoader", "yaml.FullLoader", "yaml.Loader"):
                lines.append(node.lineno)
    return lines


def test_no_module_reads_yaml_with_the_pure_python_parser() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for package in ("launch", "t3rl_core")
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in ALLOWED
        for line in _pure_python_reads(source_tree.text(path), source_tree.nodes(path))
    }
    assert not found, f"read these with t3rl_core.yaml_text.safe_load: {sorted(found)}"


@pytest.mark.parametrize(
    "source",
    [
        "import yaml\nyaml.safe_load(text)",
        "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)",
        "import yaml\nyaml.load(text)",
    ],
)
def test_the_scan_finds_a_pure_python_read(source: str) -> None:
    assert _pure_python_reads(source) == [2]


def test_the_scan_leaves_a_libyaml_read() -> None:
    assert _pure_python_reads("import yaml\nyaml.load(text, Loader=yaml.CSafeLoader)") == []


@pytest.mark.parametrize(
    "text", ["a: 1\nb: [x, 'y']\n", "on: yes\nwhen: 1:30\n", "- 0755\n- 1e3\n- ~\n", "k: !!str 5\n", ""]
)
def test_the_one_reader_reads_as_pyyaml(text: str) -> None:
    assert safe_load(text) == yaml.safe_load(text)
