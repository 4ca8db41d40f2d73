"""`gc.freeze()` that is undone at exit, for every long-lived heap t3rl moves out of the collector's way.

Frozen objects are never collected, and nanobind extensions (triton, which torch loads in every
rollout worker and in any process that builds a transformers model) report each of their objects
still alive when the interpreter shuts down as "nanobind: leaked …". An atexit handler runs before
that shutdown: unfreezing there lets the interpreter's last collections free them, so a freeze costs
nothing at exit and prints nothing.
"""

from __future__ import annotations

import atexit
import gc
from functools import cache


@cache
def _unfreeze_at_exit() -> None:
    atexit.register(gc.unfreeze)


def freeze_long_lived() -> None:
    """Move every object alive now out of the collector's way until the process exits."""
    _unfreeze_at_exit()
    gc.freeze()
