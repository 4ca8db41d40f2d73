"""Every package t3rl's code imports is one the project declares (requirements/base.in or nodeps.in).

A package that is installed here only because another one depends on it (`packaging` through pip's
tools, `jinja2` through transformers, `numpy` through pandas) works until that other package drops
it or changes its pin; `scripts/lock.sh` resolves base.in alone, so an import nobody declared is a
lock away from an ImportError. Code imported only on the GPU side by slime's own processes (slime,
Megatron-LM) comes with slime's image and is named here with that reason.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

from tests.support import source_tree

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("launch", "t3rl_core", "tests", "benchmarks", "scripts", "examples")
DECLARATIONS = ("requirements/base.in", "requirements/nodeps.in")
OWN_PACKAGES = frozenset({"launch", "t3rl_core", "t3rl_conf", "tests", "benchmarks", "scripts", "examples"})
# Imported by the hooks and by scripts/gen_slime_option_table.py inside slime's processes, which run
# in slime's image: installing them is slime's setup, not t3rl's.
PROVIDED_BY_SLIME_IMAGE = frozenset({"slime", "megatron"})
# tests/hooks/slime_fakes.py imports it to stand for a world whose package is missing on a node.
NEVER_INSTALLED = frozenset({"bfcl_eval_not_installed"})


def normalized(distribution: str) -> str:
    """A distribution's name as pip compares names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def declared_distributions(texts: Iterable[str]) -> set[str]:
    """The distributions requirement files name (`name==1.0`, `name[extra]==1.0`, `name`)."""
    names = set()
    for text in texts:
        for line in text.splitlines():
            requirement = line.split("#", 1)[0].strip()
            if requirement:
                names.add(normalized(re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0]))
    return names


def local_module_names(root: Path) -> set[str]:
    """Modules tests, benchmarks and examples import as siblings or put on sys.path: not distributions."""
    names = set()
    for folder in CODE_DIRS:
        for path in (root / folder).rglob("*"):
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
                names.add(path.stem)
    return names


def imported_top_levels(root: Path) -> dict[str, set[str]]:
    """Top-level module → the files that import it, over every absolute import of t3rl's code."""
    found: dict[str, set[str]] = {}
    for folder in CODE_DIRS:
        for path in sorted((root / folder).rglob("*.py")):
            for node in source_tree.nodes(path):  # parsed once for this process's scans
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    found.setdefault(module.split(".")[0], set()).add(str(path.relative_to(root)))
    return found


def undeclared(
    imported: Mapping[str, set[str]],
    providers: Mapping[str, list[str]],
    declared: set[str],
    local: set[str],
) -> dict[str, list[str]]:
    """Third-party modules no declared distribution provides → the files importing them."""
    left = {}
    for module, files in imported.items():
        if (
            module in sys.stdlib_module_names
            or module == "__future__"
            or module in OWN_PACKAGES | PROVIDED_BY_SLIME_IMAGE | NEVER_INSTALLED | local
        ):
            continue
        if not any(normalized(d) in declared for d in providers.get(module, ())):
            left[module] = sorted(files)
    return left


@cache
def _inputs() -> tuple[dict[str, set[str]], dict[str, list[str]], set[str], set[str]]:
    texts = [(ROOT / name).read_text() for name in DECLARATIONS]
    imported = imported_top_levels(ROOT)
    local = local_module_names(ROOT) - set(packages_distributions())
    return imported, packages_distributions(), declared_distributions(texts), local


def test_every_package_the_code_imports_is_declared() -> None:
    imported, providers, declared, local = _inputs()
    missing = undeclared(imported, providers, declared, local)
    assert not missing, (
        "imported but declared in neither requirements/base.in nor nodeps.in (add them with the lock's "
        f"pin): {missing}"
    )


def pins(text: str) -> dict[str, str]:
    """`name==version` lines → {normalized name: version}."""
    found = re.finditer(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s#;]+)", text, re.M)
    return {normalized(m[1]): m[2] for m in found}


def test_every_declared_distribution_is_pinned_by_the_lock_at_its_declared_version() -> None:
    texts = [(ROOT / name).read_text() for name in DECLARATIONS]
    lock = (ROOT / "requirements/lock.txt").read_text()
    declared, locked = declared_distributions(texts), pins(lock)
    assert declared <= set(locked), (
        f"declared but not in requirements/lock.txt: {sorted(declared - set(locked))}"
    )
    differ = {
        name: (version, locked[name])
        for text in texts
        for name, version in pins(text).items()
        if locked[name] != version
    }
    assert not differ, f"declared pin != lock's pin (declared, locked): {differ}"


def _third_party_imports() -> list[tuple[str, str]]:
    imported, providers, declared, local = _inputs()
    pairs = []
    for module in sorted(imported):
        for distribution in providers.get(module, ()):
            if normalized(distribution) in declared and module not in local:
                pairs.append((module, normalized(distribution)))
    return pairs


def test_dropping_a_declaration_leaves_its_module_undeclared() -> None:
    """Mutation: each declared distribution the code imports, taken out of the declarations, is named.
    One test over every pair rather than one per pair: parametrizing needed every source file parsed
    while collecting, in each of the suite's workers (~3.6 s each), not only in the one that runs it."""
    imported, providers, declared, local = _inputs()
    pairs = _third_party_imports()
    assert len(pairs) > 10, pairs  # the code imports its libraries: not a vacuous loop
    wrong = []
    for module, distribution in pairs:
        others = {d for d in declared if d != distribution}
        still_provided = any(normalized(d) in others for d in providers[module])
        missing = undeclared(imported, providers, others, local)
        if (module in missing) is still_provided:
            wrong.append((module, distribution))
    assert not wrong, f"(module, distribution) pairs whose dropped declaration went unnoticed: {wrong}"
