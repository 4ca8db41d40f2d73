"""Two BFCL worlds share no mutable state: what one episode's calls change (a file, a card's balance, a
booking) no other world of the process sees. bfcl-eval's long-context loads merge module-level extensions
by reference, so t3rl copies those worlds' state (t3rl_core/envs/bfcl/world.py); its other loads copy
their defaults themselves, which this walk checks too, since t3rl does not copy them (~0.4 ms a world)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("bfcl_eval")

STATEFUL = (
    "GorillaFileSystem", "MessageAPI", "TwitterAPI", "TicketAPI", "TradingBot", "TravelAPI",
    "VehicleControlAPI",
)  # fmt: skip


def _containers(value: Any, found: dict[int, str], path: str, depth: int = 0) -> None:
    """Every mutable container (and object) reachable from `value`, by identity, with a path to it."""
    if depth > 8 or id(value) in found:
        return
    if isinstance(value, dict):
        found[id(value)] = path
        for key, item in value.items():
            _containers(item, found, f"{path}[{key!r}]", depth + 1)
    elif isinstance(value, list | set):
        found[id(value)] = path
        for index, item in enumerate(value):
            _containers(item, found, f"{path}[{index}]", depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        found[id(value)] = path
        for key, item in vars(value).items():
            _containers(item, found, f"{path}.{key}", depth + 1)


@pytest.mark.parametrize("long_context", [False, True])
def test_two_worlds_share_no_mutable_state(long_context: bool) -> None:
    from t3rl_core.envs.bfcl.world import World

    first: dict[int, str] = {}
    second: dict[int, str] = {}
    for found in (first, second):
        world = World({}, STATEFUL, long_context=long_context)
        for name, instance in world.instances.items():
            _containers(instance, found, name)
    shared = sorted(first[key] for key in first.keys() & second.keys())
    assert not shared, shared[:5]
