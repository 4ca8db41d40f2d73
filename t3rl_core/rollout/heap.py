"""Keep a rollout process's start-up heap out of the garbage collector's way.

A rollout or eval process loads its dataset rows, tokenizer, parsers and env classes once and keeps
them to the end, while hundreds of concurrent episodes allocate and drop objects on one event loop.
Every full collection walked that whole start-up heap again: on 256 concurrent BFCL episodes the
collector took 0.1-0.35 s of a ~1 s batch (benchmarks/bfcl_concurrency.py). `gc.freeze()` moves the
objects alive at the first runner's construction to a generation the collector never scans; what
they hold is still freed by reference counting, only cyclic garbage among them would stay.

The young generation's threshold is raised too (never lowered): with Python's default of 700
allocations, the episodes' short-lived objects (a BFCL world's copied scenario alone is hundreds of
containers) set off ~60 young collections a batch, ~0.1 s; at 10,000 most of them are freed by
reference counting before any collection runs.
"""

from __future__ import annotations

import gc

from t3rl_core.gc_freeze import freeze_long_lived

_frozen = False
YOUNG_THRESHOLD = 10_000


def freeze_startup_heap() -> None:
    """Collect once, freeze what survives and raise the young threshold (the first call only)."""
    global _frozen
    if _frozen:
        return
    _frozen = True
    gc.collect()
    freeze_long_lived()  # undone at exit: a rollout worker has torch's triton loaded
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
