"""The xdist controller stores Hypothesis's constants of the checkout's packages for its workers
(tests/support/hypothesis_constants.py): each package module is stored, as Hypothesis reads it itself;
tests and files outside a package are not."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from hypothesis import configuration
from hypothesis.internal.constants_ast import _constants_from_source, constants_from_module

from tests.support.hypothesis_constants import warm_constants


def test_each_package_module_is_stored_as_hypothesis_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "checkout"
    (root / "pkg" / "inner").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "inner" / "__init__.py").write_text("WIDTH = 17\n")
    limits = root / "pkg" / "inner" / "limits.py"
    limits.write_text("CEILING = 4242.5\nNAME = 'seventeen'\n")
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_x.py").write_text("X = 99\n")  # a test module: Hypothesis reads none
    (root / "scripts").mkdir()
    (root / "scripts" / "tool.py").write_text("Y = 7\n")  # in no package: no worker imports it
    home = tmp_path / "home"
    monkeypatch.setattr(configuration, "__hypothesis_home_directory", home)

    thread = warm_constants(root)
    assert thread is not None
    thread.join()

    stored = [path.read_text() for path in (home / "constants").iterdir()]
    headers = sorted(text.splitlines()[0] for text in stored)
    package = ("pkg/__init__.py", "pkg/inner/__init__.py", "pkg/inner/limits.py")
    assert headers == sorted(f"# file: {root / name}" for name in package)
    # A worker's read of the module (a cache hit now) is what Hypothesis reads from its source.
    module = types.ModuleType("limits")
    module.__file__ = str(limits)
    assert set(constants_from_module(module)) == set(_constants_from_source(limits.read_bytes(), limit=True))
    assert {4242.5, "seventeen"} <= set(constants_from_module(module))
