"""A world's outcome is JSON data: what `Env.outcome()` declares, checked where the episode takes it.

The outcome goes into the eval's records (one JSON line each), slime's `sample.metadata` and the
rewards. Taken as it was, a tuple key raised TypeError out of the eval's record writer (no record
for the episode), and the rest was written as its `str` without a word: a set as "{1, 2}", bytes as
"b'xy'", a numpy count as the text "3", an object as its address; an int key came back as text, and
NaN was written as `NaN`, which no strict JSON reader takes. `json_outcome` converts what stands for a
JSON value (a numpy scalar, as the number or bool it is; a tuple, as a list) and names the rest.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from t3rl_core.finite import shown
from t3rl_core.outside_json import MAX_DEPTH

_PLAIN = frozenset({str, int, float, bool})


def json_outcome(outcome: Mapping[Any, Any], name: str = "outcome") -> tuple[dict[str, Any], list[str]]:
    """`outcome` as JSON data (numpy scalars and tuples converted), without its entries that hold no
    JSON value, and what is wrong with each of those (empty when nothing is); `name` says what it is
    in them (a world's message is JSON data too: episode._world_messages)."""
    kept: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in outcome.items():
        if type(key) is not str:
            problems.append(f"{name} has {_key(key)}")
            continue
        if type(value) is str:  # most of a message: its role and content
            kept[key] = value
            continue
        try:
            kept[key] = _json_value(value, f"{name}[{key!r}]")
        except ValueError as exc:
            problems.append(str(exc))
    return kept, problems


def _json_value(value: Any, where: str, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"{where} nests past {MAX_DEPTH} levels")
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()  # a numpy scalar: np.int64(3) -> 3, np.bool_(True) -> True
    if value is None or type(value) in _PLAIN:
        if type(value) is float and not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}, which JSON cannot hold: report None, or a finite number")
        if type(value) is int and _too_long(value):
            # Python writes no integer past its digit limit as text: json.dumps raised ValueError out of
            # the eval's record writer, and the episode had no record.
            raise ValueError(
                f"{where} is an integer of more than {sys.get_int_max_str_digits()} digits, which Python's "
                "JSON writer does not write: report it as text, or a float"
            )
        return value
    if isinstance(value, str):  # a StrEnum's member: its text, as json writes it (str() may be its name)
        return str.__str__(value)
    if isinstance(value, int | float):  # an IntEnum's member: its number
        return _json_value(float(value) if isinstance(value, float) else int(value), where, depth)
    if type(value) is dict or isinstance(value, Mapping):
        converted = {}
        for key, item in value.items():
            if type(key) is not str:
                raise ValueError(f"{where} has {_key(key)}")
            converted[key] = _json_value(item, f"{where}[{key!r}]", depth + 1)
        return converted
    if type(value) in (list, tuple):
        return [_json_value(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise ValueError(f"{where} is of type {type(value).__name__} ({shown(value, 60)}), no JSON value")


def _too_long(value: int) -> bool:
    """Whether `value` has more digits than Python turns into text (sys.set_int_max_str_digits)."""
    limit = sys.get_int_max_str_digits()
    return limit > 0 and value.bit_length() > 3 * limit and abs(value) >= 10**limit


def _key(key: Any) -> str:
    return f"a key of type {type(key).__name__} ({shown(key, 40)}), where JSON has text"
