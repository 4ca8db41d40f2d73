"""Known secret values masked in text, also where a terminal view split or cut them.

Replacing each value where it occurs whole misses it where the output was laid out after the value was
put in: rich folds a word longer than the terminal over several lines (the value's pieces, each on a
line of its own, read back into the value), and a view that shortens long text (`rollouts show`, a
table cell) shows a value's beginning and an ellipsis. `mask_values` masks a value whole, across line
breaks and the indentation or border that follows them, and, for values that look random, any
beginning or end of it of `PIECE` characters or more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

MASK = "***"
# A beginning or end this long of a random value is taken for the value (a key's first 12 random
# characters do not occur by chance; an ordinary value's, e.g. a path's, might, so they are not cut).
PIECE = 12
# A line break and what a renderer puts around it: trailing padding, the next line's indentation or
# a panel's border.
_BREAK = re.compile(r"[ \t]*\r?\n[ \t│┃║|]*")


def mask_values(text: str, values: Iterable[str], is_random: Callable[[str], bool]) -> str:
    """`text` with each of `values` masked whole (longest first), folded over lines, and, where
    `is_random(value)`, any beginning or end of it at least `PIECE` long."""
    ordered = sorted({v for v in values if v}, key=len, reverse=True)
    for value in ordered:
        text = text.replace(value, MASK)
    foldable = [v for v in ordered if len(v) >= 4]
    if foldable and "\n" in text:
        text = _mask_folded(text, foldable)
    for value in ordered:
        if len(value) > PIECE and is_random(value):
            text = _mask_ends(text, value)
    return text


def _mask_folded(text: str, values: list[str]) -> str:
    """Each value whose characters `text` holds with line breaks between them, masked (the lines it
    spans joined)."""
    kept: list[int] = []  # the index in `text` of each character of `joined`
    start = 0
    for match in _BREAK.finditer(text):
        kept.extend(range(start, match.start()))
        start = match.end()
    kept.extend(range(start, len(text)))
    joined = "".join(text[i] for i in kept)
    spans = []
    for value in values:
        at = joined.find(value)
        while at != -1:
            spans.append((kept[at], kept[at + len(value) - 1] + 1))
            at = joined.find(value, at + len(value))
    return _masked(text, spans)


def _mask_ends(text: str, value: str) -> str:
    """Every run of `text` that is a beginning or an end of `value`, `PIECE` characters or longer."""
    head, tail = value[:PIECE], value[-PIECE:]
    spans = []
    at = text.find(head)
    while at != -1:
        end = at + PIECE
        while end < len(text) and end - at < len(value) and text[end] == value[end - at]:
            end += 1
        spans.append((at, end))
        at = text.find(head, end)
    at = text.find(tail)
    while at != -1:
        begin, end = at, at + PIECE
        while begin > 0 and end - begin < len(value) and text[begin - 1] == value[-(end - begin) - 1]:
            begin -= 1
        spans.append((begin, end))
        at = text.find(tail, end)
    return _masked(text, spans)


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """`text` with each span (overlapping ones merged) replaced by the mask."""
    merged: list[tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    for begin, end in reversed(merged):
        text = text[:begin] + MASK + text[end:]
    return text
