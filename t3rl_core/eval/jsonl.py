"""One trajectory record as a JSON line, written fast where it is long.

Its token lists are most of a record (a BFCL prompt alone is thousands of ids): `json.dumps` spends
~1.5 ms a record on them on the event loop, orjson a tenth of that. orjson writes these lists as
json would read them back, with one exception it cannot be told to keep: a NaN or infinite float
becomes null. A list whose orjson text has a null (or that orjson refuses) is written by json instead,
so every record reads back exactly as `json.dumps` would have written it; so is a list whose text holds
an "n" anywhere (a string element), which a list of numbers never does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from t3rl_core.secret import mask_episode_text, mask_revealed

# The per-token lists of a record (ints, and log-probs as floats).
LIST_FIELDS = ("prompt_ids", "response_ids", "loss_mask", "log_probs")
# The episode's own text: what the model wrote and the world answered, replayed by official scorers.
EPISODE_TEXT_FIELDS = ("messages", "response_text")
_PLACEHOLDER = "\0t3rl-episode-text\0"


def record_line(record: Mapping[str, Any]) -> str:
    """`json.dumps(record, default=str)` (the token lists last) and a newline."""
    lists = {key: record[key] for key in LIST_FIELDS if type(record.get(key)) is list}
    # The episode's text stands in the record's order as a placeholder (JSON writes its NULs escaped,
    # which no mask reads), replaced by its own masking of that text.
    episode = {key: json.dumps(record[key], default=str) for key in EPISODE_TEXT_FIELDS if key in record}
    shown = {key: _PLACEHOLDER + key if key in episode else value for key, value in record.items()}
    # Its other fields may quote a credential (an error message): masked; its token lists cannot.
    rest = mask_revealed(
        json.dumps({key: value for key, value in shown.items() if key not in lists}, default=str)
    )
    for key, text in episode.items():
        rest = rest.replace(json.dumps(_PLACEHOLDER + key), mask_episode_text(text), 1)
    if not lists:
        return rest + "\n"
    parts = [f"{json.dumps(key)}: {_list_text(value)}" for key, value in lists.items()]
    return rest[:-1] + (", " if rest != "{}" else "") + ", ".join(parts) + "}\n"


def _list_text(values: list[Any]) -> str:
    try:
        text = orjson.dumps(values)
    except TypeError:
        return json.dumps(values, default=str)
    # A None, or a NaN/infinity that json writes as NaN/Infinity, is orjson's `null`. Numbers, true and
    # false hold no "n": one memchr over the text instead of a search for the word (~4x as long).
    if b"n" in text:
        return json.dumps(values, default=str)
    return text.decode()
