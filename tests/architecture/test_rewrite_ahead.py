"""tests/support/rewrite_ahead.py: the pyc it writes for a test module holds pytest's rewritten asserts
(what a worker would otherwise compute again), once; a module that does not compile is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, get_cache_dir

from tests.support.rewrite_ahead import rewrite_ahead


def test_the_pyc_holds_the_rewritten_asserts_and_is_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    module = tmp_path / "test_planted.py"
    module.write_text("def test_sum():\n    total = 1 + 1\n    assert total == 3\n")
    (tmp_path / "test_broken.py").write_text("def test_(:\n")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "test_data.py").write_text("X = 1\n")
    monkeypatch.setattr(pytestconfig, "args", [str(tmp_path)])

    assert rewrite_ahead(pytestconfig) == 1
    code = _read_pyc(module, get_cache_dir(module) / f"test_planted{PYC_TAIL}")
    assert code is not None
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match=r"assert 2 == 3"):  # a plain assert's message is empty
        namespace["test_sum"]()
    assert not (tmp_path / "fixtures" / "__pycache__").exists()
    assert rewrite_ahead(pytestconfig) == 0  # current: nothing to write again

    module.write_text(module.read_text().replace("== 3", "== 4"))
    assert rewrite_ahead(pytestconfig) == 1
