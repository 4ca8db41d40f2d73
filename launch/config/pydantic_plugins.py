"""pydantic's plugins stay out of the launcher's own config validation.

On its first validator pydantic scans every installed distribution for `pydantic` entry points (a
tenth of a cold `t3rl validate`'s schema work). Plugins instrument validation (tracing, metrics); the
launcher validating its config is not what they are for, so while it does, pydantic's documented switch
`PYDANTIC_DISABLE_PLUGINS` is set, unless the user set it. It is unset again before any stage starts,
so the processes a run starts see the environment as it was.

pydantic imports its plugin loader with its first validator, and the loader imports `importlib.metadata`
(with the email, csv and zipfile modules it loads: ~35 M instructions, ~3 % of a cold `t3rl plan`) for
the one function it scans with, which the switch never lets it call. So the block first imports the
loader with that function looked up when it is called (`_entry_points`): the scan, when one runs (the
switch unset later in the process), reads the same entry points.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SWITCH = "PYDANTIC_DISABLE_PLUGINS"
# pydantic's plugin loader: `from importlib.metadata import entry_points` is its only use of the module.
LOADER = "pydantic.plugin._loader"
METADATA = "importlib.metadata"


@contextmanager
def without_plugins() -> Iterator[None]:
    """Within the block, validators pydantic builds load no plugins (the user's setting wins)."""
    loader_without_metadata()
    if SWITCH in os.environ:
        yield
        return
    os.environ[SWITCH] = "__all__"
    try:
        yield
    finally:
        os.environ.pop(SWITCH, None)


def loader_without_metadata() -> None:
    """pydantic's plugin loader imported with `_entry_points` for its `entry_points`, unless it or
    `importlib.metadata` is imported already (then there is nothing to save: it is imported as usual).
    The stand-in module is in `sys.modules` only while the loader's own lines run."""
    if LOADER in sys.modules or METADATA in sys.modules:
        return
    stand_in = types.ModuleType(METADATA)
    stand_in.entry_points = _entry_points  # type: ignore[attr-defined]
    sys.modules[METADATA] = stand_in
    try:
        importlib.import_module(LOADER)
    except ImportError:  # a pydantic without this module: it imports what it needs when it needs it
        pass
    finally:
        if sys.modules.get(METADATA) is stand_in:
            del sys.modules[METADATA]


def _entry_points(**params: Any) -> Any:
    """`importlib.metadata.entry_points`, imported when pydantic scans for plugins."""
    # lazy: importlib.metadata (with the email, csv and zipfile modules it loads), only for a scan
    from importlib.metadata import entry_points

    return entry_points(**params)
