"""Text read as it reads with the escapes of a name's characters undone (`api%5Fkey=V`, `"\\u0074oken": "V"`).

No encoder escapes a letter, a digit, `_`, `-` or `.`: they are RFC 3986's unreserved characters and
JSON's, HTML's and Python's plain ones. A text that writes one escaped was written so by hand, to be read
as the character (`%41PI_KEY=V` is `API_KEY=V` to whoever decodes it), so the masking reads it decoded:
`ESCAPES` is the one table of the forms an escape takes, and `mask_escaped_names` masks in the text as
written whatever the masking changes in its decoded reading. An escape of any other character (`%20`,
`\\u00e4`, `&#39;`) stays as it is: the readers of values take those forms already, and decoding them
would change what a line's reader sees (a quote, a line break).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from t3rl_core.secret_pieces import MASK, masked_spans

# (form, pattern of one escaped character, its group's base): percent-encoding (a URL, a form), JSON's
# and JavaScript's `\u`, Python's and C's `\x`, HTML's and XML's numeric references. Each reads the
# escapes of ASCII's printable range only (U+0020-U+007F), so an eval record's escaped accents and
# quotes (`\u00e4`, `\u2019`) cost no decoding.
ESCAPES: tuple[tuple[str, str, int], ...] = (
    ("percent", r"%([2-7][0-9A-Fa-f])", 16),
    ("json", r"\\u(00[2-7][0-9A-Fa-f])", 16),
    ("python", r"\\x([2-7][0-9A-Fa-f])", 16),
    ("html decimal", r"&#0*((?:4[5-9]|[5-9][0-9]|1[01][0-9]|12[0-2]));", 10),
    ("html hex", r"&#[xX]0*([2-7][0-9A-Fa-f]);", 16),
)
# What a form's sign is, for the test whether a text may hold one at all (most text holds none of them).
_SIGNS = ("%", "\\u00", "\\x", "&#")
_ESCAPED = "|".join(pattern for _, pattern, _ in ESCAPES)  # compiled by re's cache on first use
_BASES = tuple(base for _, _, base in ESCAPES)
_NAME_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def decoded_names(text: str) -> tuple[str, list[int]] | None:
    """`text` with every escape of a name's character undone, and where each of its characters (and its
    end) begins in `text`; None when it holds no such escape."""
    if not any(sign in text for sign in _SIGNS):
        return None
    pieces: list[str] = []
    starts: list[int] = []
    done = 0
    for found in re.finditer(_ESCAPED, text):
        group = next(i for i, value in enumerate(found.groups()) if value is not None)
        character = chr(int(found.group(group + 1), _BASES[group]))
        if character not in _NAME_CHARACTERS:
            continue
        pieces += [text[done : found.start()], character]
        starts += [*range(done, found.start()), found.start()]
        done = found.end()
    if not pieces:
        return None
    pieces.append(text[done:])
    starts += [*range(done, len(text) + 1)]
    return "".join(pieces), starts


def mask_escaped_names(text: str, masks: Callable[[str], str]) -> str:
    """`text` masked where `masks` changes its reading with the escapes of names' characters undone (the
    escaped characters inside a masked part masked with it)."""
    decoding = decoded_names(text)
    if decoding is None:
        return text
    decoded, starts = decoding
    masked = masks(decoded)
    if masked == decoded:
        return text
    return masked_spans(text, [(starts[a], starts[b]) for a, b in replaced_spans(decoded, masked)])


def replaced_spans(before: str, masked: str) -> list[tuple[int, int]]:
    """The spans of `before` that the masking replaced by the mask to give `masked`: the text between
    the mask's occurrences is `before`'s own, found in it in order (`str.find`, a C scan each) from the
    left and again from the right. Where both readings agree and give `masked` again they are the spans;
    where they differ (a piece between two masks also stood inside a masked value) or cannot be told (a
    mask beside a `*` of the text, `****`, reads either side of it), everything from the first character
    that differs to the last is taken: more than the values, never less (but a `*` of a value beside the
    mask, which reads as the mask's own)."""
    pieces = masked.split(MASK)
    if MASK + "*" not in masked and before.startswith(pieces[0]) and before.endswith(pieces[-1]):
        spans = _aligned(before, pieces)
        if (
            spans is not None
            and spans == _aligned_from_the_right(before, pieces)
            and masked_spans(before, spans) == masked
        ):
            return spans
    first = _common_prefix(before, masked)
    last = len(before) - min(_common_prefix(before[::-1], masked[::-1]), len(before) - first)
    return [(first, last)]


def _aligned(before: str, pieces: list[str]) -> list[tuple[int, int]] | None:
    """The masked spans of `before` between `pieces`, each piece at its first place after the last."""
    spans, at = [], len(pieces[0])
    for piece in pieces[1:-1]:
        found = before.find(piece, at + 1)
        if found < 0:
            return None
        spans.append((at, found))
        at = found + len(piece)
    end = len(before) - len(pieces[-1])
    return [*spans, (at, end)] if at < end else None


def _aligned_from_the_right(before: str, pieces: list[str]) -> list[tuple[int, int]] | None:
    """`_aligned`, each piece at its last place before the next."""
    spans, at = [], len(before) - len(pieces[-1])
    for piece in reversed(pieces[1:-1]):
        found = before.rfind(piece, 0, at - 1)
        if found < 0:
            return None
        spans.append((found + len(piece), at))
        at = found
    start = len(pieces[0])
    return [(start, at), *reversed(spans)] if start < at else None


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common beginning of `a` and `b` (halving: each step one C comparison)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low
