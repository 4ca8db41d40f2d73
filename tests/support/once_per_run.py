"""A value computed once for the whole test run, whichever process asks first, and read back by the
others: xdist's workers each collect the whole suite, so what a module computes at import (a sample of
parametrised cases, say) was computed once per worker. The value is pickled into the run's shared
directory ($T3RL_TEST_SHARED_DIR, tests/conftest.py: made for one run and removed after it, so no
entry outlives the code and configs it was computed from); outside the suite it is computed each time."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def once_per_run(name: str, compute: Callable[[], T]) -> T:
    """`compute()`, or the value a process of this run already computed under `name`."""
    shared = os.environ.get("T3RL_TEST_SHARED_DIR")
    if shared is None:
        return compute()
    stored = Path(shared) / f"{name}.pickle"
    with (Path(shared) / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if stored.exists():
            value: T = pickle.loads(stored.read_bytes())
            return value
        value = compute()
        partial = stored.with_name(f"{stored.name}.{os.getpid()}")
        partial.write_bytes(pickle.dumps(value))
        partial.replace(stored)  # a reader never sees half a value
        return value
