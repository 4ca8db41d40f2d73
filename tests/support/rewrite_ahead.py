"""The test modules' asserts rewritten once for all xdist workers, before they start.

pytest rewrites the asserts of each test module as it imports it, and keeps the result in a pyc beside it
unless writing bytecode is off, which it is wherever PYTHONDONTWRITEBYTECODE is set (the developers'
machines, CI, `scripts/test.sh`): every worker rewrote every module again as it collected (~3.8 s of
CPU each). The controller writes those pycs here once, with pytest's own functions and its config; a
worker still rewrites a module whose pyc does not hold its source's hash (pytest checks it on read).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def rewrite_ahead(config: pytest.Config) -> int:
    """Write the rewritten pyc of every test module and conftest.py under the paths of this run that
    lacks a current one; how many were written (0 with a pytest whose internals differ)."""
    try:
        # lazy: pytest's private rewriting functions, only in an xdist controller
        from _pytest.assertion.rewrite import (
            PYC_TAIL,
            _read_pyc,
            _rewrite_test,
            _write_pyc,
            assertstate_key,
            get_cache_dir,
        )
    except ImportError:  # another pytest: each worker rewrites as before
        return 0
    state = config.stash.get(assertstate_key, None)
    if state is None:  # assertion rewriting is off (--assert=plain)
        return 0
    written = 0
    for file in sorted(set(_modules(config))):
        folder = get_cache_dir(file)
        pyc = folder / (file.name[:-3] + PYC_TAIL)
        if _read_pyc(file, pyc) is not None:
            continue
        try:
            source_hash, code = _rewrite_test(file, config)
        except (SyntaxError, ValueError, OSError):  # left to the worker, whose import reports it
            continue
        folder.mkdir(parents=True, exist_ok=True)
        written += _write_pyc(state, code, source_hash, pyc)
    return written


def _modules(config: pytest.Config) -> Iterator[Path]:
    """The test modules and conftest.py files below the paths on the command line (the test paths when
    none is given; not in hidden or fixtures folders), and the conftest.py files above them up to the
    root directory."""
    root = config.rootpath
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path.is_file():
            yield path
        elif path.is_dir():
            for file in (*path.rglob("test_*.py"), *path.rglob("conftest.py")):
                parts = file.relative_to(path).parts
                if not any(part.startswith(".") or part == "fixtures" for part in parts):
                    yield file
        for parent in path.parents:
            if parent != root and root not in parent.parents:
                break
            if (parent / "conftest.py").is_file():
                yield parent / "conftest.py"
