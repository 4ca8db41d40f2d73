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
from difflib import SequenceMatcher

from t3rl_core.secret_pieces import masked_spans

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
    # What the masking replaced in the decoded reading, as spans of it; each mapped back to `text`.
    changes = SequenceMatcher(None, decoded, masked, autojunk=False).get_opcodes()
    spans = [(starts[a], starts[b]) for tag, a, b, _, _ in changes if tag in ("replace", "delete")]
    return masked_spans(text, spans)
