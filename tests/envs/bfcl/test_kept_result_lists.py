"""A dict result's long lists of atoms are written from kept JSON text (world._with_kept_lists): the
text is json.dumps's whatever changed between two calls: the list's items replaced by equal values of
another type or sign, items mutated inside a list of containers, keys that are not str, and the
long-context stock listing of bfcl-eval's TradingBot."""

from __future__ import annotations

import json
from typing import Any

from t3rl_core.envs.bfcl.world import KEPT_LIST_MIN, World, result_text
from t3rl_core.types import ToolCall


def _written(result: dict[Any, Any]) -> str:
    """result_text twice (the second from kept text), each the same as json.dumps now."""
    first, second = result_text(result), result_text(result)
    assert first == second == json.dumps(result)
    return first


def test_a_kept_list_changed_in_place_is_written_again() -> None:
    listing: list[Any] = [float(n) + 0.25 for n in range(KEPT_LIST_MIN)]
    result = {"price": 1.5, "MA(5)": listing, "name": "é\n", "MA(20)": listing}
    _written(result)
    # Equal to the kept items, written otherwise: an identity test, not ==, tells them apart.
    for changed in (0, 1.0, True, -0.0):
        listing[len(listing) // 2] = changed
        _written(result)
        listing[0], listing[-1] = listing[-1], listing[0]
        _written(result)
    listing[-1] = -0.0
    assert _written(result).endswith("-0.0]}")
    listing[-1] = 0.0
    assert _written(result).endswith("0.0]}") and not _written(result).endswith("-0.0]}")
    listing.append(float("nan"))
    listing.insert(0, "\u2028")
    _written(result)


def test_lists_of_containers_and_other_keys_are_written_as_json_dumps() -> None:
    rows = [{"n": n} for n in range(KEPT_LIST_MIN)]
    result: dict[Any, Any] = {"rows": rows}
    _written(result)
    rows[0]["n"] = "changed in place"  # the same list, the same items: one of them changed inside
    assert '"changed in place"' in _written(result)
    numbers = list(range(KEPT_LIST_MIN))
    for key in (1, 2.5, None, True):  # json.dumps writes these keys as quoted text
        _written({key: numbers, "short": [1, 2]})
    assert result_text({("a", "tuple"): numbers}) == str({("a", "tuple"): numbers})
    assert _written({"short": [1.0] * (KEPT_LIST_MIN - 1), "empty": []})


def test_the_long_context_stock_listing_is_json_dumps_call_after_call() -> None:
    world = World({"TradingBot": {}}, ["TradingBot"], long_context=True)
    symbol = next(iter(world.instances["TradingBot"].stocks))
    result = world.instances["TradingBot"].get_stock_info(symbol)
    assert any(type(value) is list and len(value) >= KEPT_LIST_MIN for value in result.values())
    texts = {world.execute(ToolCall(name="get_stock_info", arguments={"symbol": symbol})) for _ in range(3)}
    assert texts == {json.dumps(result)}
