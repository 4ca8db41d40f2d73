"""Cache keys of JSON-like values (tool lists, messages), cheap enough to build for every episode.

A BFCL tool list is ~15k characters of JSON: `json.dumps` takes ~80 µs for it, orjson ~5 µs, and the
rollout loop builds a key per episode (prompt ids, head ids and action parsers are cached by it).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS


def json_key(value: Any, *, sort_keys: bool = False) -> str:
    """`value` as compact JSON (unserialisable leaves as their str()): equal values in the same key
    order give equal keys; with `sort_keys`, key order does not matter."""
    sort = orjson.OPT_SORT_KEYS if sort_keys else 0
    try:
        # Keys all str (any JSON data): the same text as with OPT_NON_STR_KEYS, whose key handling
        # doubles orjson's time on a BFCL tool list; any other key is refused, and written below.
        return orjson.dumps(value, default=str, option=sort).decode()
    except TypeError:
        pass
    try:
        return orjson.dumps(value, default=str, option=_OPTIONS | sort).decode()
    except TypeError:  # what orjson refuses (integers beyond 64 bits): the same text through json
        return json.dumps(value, sort_keys=sort_keys, default=str, ensure_ascii=False, separators=(",", ":"))
