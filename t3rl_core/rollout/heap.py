"""Keep a rollout process's start-up heap out of the garbage collector's way.

A rollout or eval process loads its dataset rows, tokenizer, parsers and env classes once and keeps
them to the end, while hundreds of concurrent episodes allocate and drop objects on one event loop.
Every full collection walked that whole start-up heap again: on 256 concurrent BFCL episodes the
collector took 0.1-0.35 s of a ~1 s batch (benchmarks/bfcl_concurrency.py). `gc.freeze()` moves the
objects alive at the first runner's construction to a generation the collector never scans; what
they hold is still freed by reference counting, only cyclic garbage among them would stay.

The young generation's threshold is raised too (never lowered). A collection is set off when the
containers allocated and not yet freed pass it; in a rollout process that count follows the live
episodes' objects (a BFCL world's copied scenario alone is hundreds of containers), which rise while a
batch runs and fall as its episodes end, freed by reference counting. Python's default of 700 set off
~60 young collections a batch (~0.1 s); 10,000 still set off several, each walking the live episodes'
objects (~55 ms a 256-episode BFCL batch, benchmarks/bfcl_concurrency.py, and a 13-30 ms pause in
each `eval_concurrency.py` run, at its start). At 50,000, above the live objects of such a batch, a
young collection runs only once cyclic garbage or kept results have accumulated (none in 8 batches of
256 BFCL episodes), at a cost of holding that garbage longer and of a longer pause when one runs
(~50 ms; at 100,000 a pause of ~0.1 s was seen).
"""

from __future__ import annotations

import gc

from t3rl_core.gc_freeze import freeze_long_lived

_frozen = False
YOUNG_THRESHOLD = 50_000


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
