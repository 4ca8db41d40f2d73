"""One empty working dir for a test module: the pre-flight modules run `resolve`/`validate` on configs whose
relative paths (the tracker's dir, the data, `../x`) must resolve where nothing of the checkout is.

`_in_tmp = in_tmp()` at a module's top makes an autouse module fixture named `_in_tmp` (a test that writes
files there takes it as an argument: the dir). One dir for the module, not one per test: the modules only
read the dir, or write names no other test of theirs reads; a test wanting a dir of its own takes tmp_path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def in_tmp(**env: str | None) -> Callable[..., Iterator[Path]]:
    """An autouse module fixture: the module's tests run in one new temporary dir, with `env` set for them
    (a value of None: the variable unset)."""

    @pytest.fixture(scope="module", autouse=True)
    def _in_tmp(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
        here = tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2])
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(here)
            for name, value in env.items():
                if value is None:
                    patch.delenv(name, raising=False)
                else:
                    patch.setenv(name, value)
            yield here

    return _in_tmp
