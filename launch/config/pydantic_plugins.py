"""pydantic's plugins stay out of the launcher's own config validation.

On its first validator pydantic scans every installed distribution for `pydantic` entry points (a
tenth of a cold `t3rl validate`'s schema work). Plugins instrument validation (tracing, metrics); the
launcher validating its config is not what they are for, so while it does, pydantic's documented switch
`PYDANTIC_DISABLE_PLUGINS` is set, unless the user set it. It is unset again before any stage starts,
so the processes a run starts see the environment as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

SWITCH = "PYDANTIC_DISABLE_PLUGINS"


@contextmanager
def without_plugins() -> Iterator[None]:
    """Within the block, validators pydantic builds load no plugins (the user's setting wins)."""
    if SWITCH in os.environ:
        yield
        return
    os.environ[SWITCH] = "__all__"
    try:
        yield
    finally:
        os.environ.pop(SWITCH, None)
