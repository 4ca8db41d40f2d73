"""Hypothesis's constants of t3rl's own modules, read once for all xdist workers.

Hypothesis draws more often the constants written in the project's modules: as each worker ends its
collection it reads every such module (launch/, t3rl_core/, …, not the tests) into an AST (~2 s of CPU per
worker on this checkout) and stores what it found in its storage directory, under the source's hash. The
processes of a run share that directory ($T3RL_TEST_SHARED_DIR/hypothesis, tests/conftest.py), and the
controller fills it here, in a thread, while its workers start and collect: a worker then reads each
module's constants back (~0.3 s). A module the thread has not reached yet is read by the worker as before:
the constants are the same either way, Hypothesis's own cache.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Iterator
from pathlib import Path


def warm_constants(root: Path) -> threading.Thread | None:
    """Start a thread storing the constants of every Python file of the packages at `root`; None with a
    Hypothesis whose internals differ (each worker then reads its modules as before)."""
    try:
        # lazy: Hypothesis's private constants cache, only in an xdist controller
        from hypothesis.internal.constants_ast import constants_from_module, is_local_module_file
    except ImportError:
        return None

    def store() -> None:
        for file in _package_files(root):
            if not is_local_module_file(str(file)):
                continue
            # What Hypothesis reads of a module is its file: a stand-in holding the path is read alike.
            module = types.ModuleType(file.stem)
            module.__file__ = str(file)
            constants_from_module(module)

    thread = threading.Thread(target=store, name="hypothesis-constants", daemon=True)
    thread.start()
    return thread


def _package_files(root: Path) -> Iterator[Path]:
    """The .py files of the packages at `root` (folders with an __init__.py; hidden folders skipped)."""
    for top in sorted(root.iterdir()):
        if top.name.startswith(".") or not (top / "__init__.py").is_file():
            continue
        for folder, folders, files in os.walk(top):
            folders[:] = sorted(name for name in folders if not name.startswith("."))
            yield from (Path(folder) / name for name in sorted(files) if name.endswith(".py"))
