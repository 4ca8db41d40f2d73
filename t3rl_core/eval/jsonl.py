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

from t3rl_core.records import Record
from t3rl_core.secret import mask_episode_text, mask_revealed

# The per-token lists of a record (ints, and log-probs as floats).
LIST_FIELDS = ("prompt_ids", "response_ids", "loss_mask", "log_probs")
# The episode's own text: what the model wrote and the world answered, replayed by official scorers.
EPISODE_TEXT_FIELDS = ("messages", "response_text")
_PLACEHOLDER = "\0t3rl-episode-text\0"


def record_line(record: Mapping[str, Any]) -> str:
    """`json.dumps(record, default=str)` (the token lists last) and a newline."""
    return record_bytes(record).decode()


def record_bytes(record: Mapping[str, Any]) -> bytes:
    """`record_line`'s line as the bytes written (ASCII: json and orjson escape nothing else here).
    Built as bytes from orjson's bytes: as text, each ~90 KB BFCL line was decoded, joined, encoded
    for its digest and encoded again by the file it was written to."""
    return line_of(record_parts(record))


class RecordParts(Record):
    """A record's line before its masks: what depends on the record's Python values (its JSON texts
    and token lists' bytes), so that `line_of` (the masks, most of a line's CPU) is a function of text
    alone and may run in another process (t3rl_core.eval.record_writer)."""

    rest: str  # the JSON of the fields besides the token lists, the episode text as placeholders
    episode: tuple[tuple[str, str], ...]  # each episode text field and its JSON
    lists: tuple[tuple[str, bytes], ...]  # each token list field and its JSON's bytes


def record_parts(record: Mapping[str, Any]) -> RecordParts:
    lists = {key: record[key] for key in LIST_FIELDS if type(record.get(key)) is list}
    rest, episode = _unmasked_rest(record, lists)
    return RecordParts(rest, episode, tuple((key, _list_bytes(value)) for key, value in lists.items()))


def _unmasked_rest(
    record: Mapping[str, Any], lists: Mapping[str, Any]
) -> tuple[str, tuple[tuple[str, str], ...]]:
    # The episode's text stands in the record's order as a placeholder (JSON writes its NULs escaped,
    # which no mask reads), replaced by its own masking of that text.
    episode = {key: json.dumps(record[key], default=str) for key in EPISODE_TEXT_FIELDS if key in record}
    shown = {key: _PLACEHOLDER + key if key in episode else value for key, value in record.items()}
    # Its other fields may quote a credential (an error message): masked; its token lists cannot.
    rest = json.dumps({key: value for key, value in shown.items() if key not in lists}, default=str)
    return rest, tuple(episode.items())


def line_of(parts: RecordParts) -> bytes:
    """The line of a record's `parts`, masked: its episode text by `mask_episode_text`, the rest by
    `mask_revealed`, with the values this process's Secrets revealed."""
    rest = _masked(parts)
    if not parts.lists:
        return (rest + "\n").encode()
    pieces = [rest[:-1].encode()]
    for key, value in parts.lists:
        pieces += [b", " if len(pieces) > 1 or rest != "{}" else b"", json.dumps(key).encode(), b": ", value]
    pieces.append(b"}\n")
    return b"".join(pieces)


def masked_rest(record: Mapping[str, Any], lists: Mapping[str, Any]) -> str:
    """The record's JSON without its token `lists`, masked: its episode text by `mask_episode_text`,
    the rest by `mask_revealed`."""
    return _masked(RecordParts(*_unmasked_rest(record, lists), ()))


def _masked(parts: RecordParts) -> str:
    rest = mask_revealed(parts.rest)
    for key, text in parts.episode:
        rest = rest.replace(json.dumps(_PLACEHOLDER + key), mask_episode_text(text), 1)
    return rest


def _list_bytes(values: list[Any]) -> bytes:
    try:
        text = orjson.dumps(values)
    except TypeError:
        return json.dumps(values, default=str).encode()
    # A None, or a NaN/infinity that json writes as NaN/Infinity, is orjson's `null`. Numbers, true and
    # false hold no "n": one memchr over the text instead of a search for the word (~4x as long).
    if b"n" in text:
        return json.dumps(values, default=str).encode()
    return text
