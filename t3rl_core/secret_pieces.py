"""Known secret values masked in text, also encoded, and where a terminal view split or cut them.

Replacing each value where it occurs whole misses it where the output was laid out after the value was
put in: rich folds a word longer than the terminal over several lines (the value's pieces, each on a
line of its own, read back into the value), and a value with spaces at them, as rich, textwrap and YAML
fold words; a view that shortens long text (`rollouts show`, a table cell) shows a value's beginning
and an ellipsis; and a value with a quote, a backslash, a
non-ASCII letter or a space is written escaped in JSON (trajectories.jsonl, summary.json), quoted in a
URL or in a shell command. `mask_values` masks a value whole and in each of those encodings, across
line breaks and the indentation or border that follows them, and, for values that look random, any
beginning or end of it of `PIECE` characters or more. Text whose credential's name has a character
escaped by hand (`api%5Fkey=V`) is read decoded too (`mask_escaped_names`, the last section).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import json
import re
import shlex
from collections.abc import Callable, Iterable
from functools import lru_cache
from urllib.parse import quote, quote_plus

from t3rl_core.secret_name_words import names_in_english

MASK = "***"
# A beginning or end this long of a random value is taken for the value (a key's first 12 random
# characters do not occur by chance; an ordinary value's, e.g. a path's, might, so they are not cut).
PIECE = 12
# A piece of a known value this long at a line's edge (its beginning ending a line, its end beginning one)
# is taken for the value folded there: anchored at the break, it does not occur by chance as often.
EDGE = 6
# What a renderer puts around a line break besides padding: a panel's or table's border.
_BORDERS = "│┃║|"
# What `_strip` may take off a line's end; `line[:1] in _EDGES` also holds for an empty line.
_EDGES = " \t\r" + _BORDERS
# A mapping's key at the start of a line (YAML, JSON); a string, compiled through re's cache on first use.
_KEY_FIRST = r'(?:[\w.-]+|"[\w.-]+"):(?:\s|$)'
# A line that begins as a record of its own: what a log, an environment dump or a command's output
# writes after a line ending with a value. A word of prose (`started server`, `Ready.`, `ERROR`), a number, a
# date or a time (`2026-11-29 12:00:01`, `0.5`), a list's, a shell trace's or a prompt's sign (`- `,
# `+ `, `$ `, `>>> `) or an ellipsis: each shorter than `PIECE`, so where a renderer did fold a value
# there, what is left of it on the line below is a piece too short to be taken for the value anywhere
# else. An assignment (`LANG=C.UTF-8`, `export HOME=/root`), a flag (`--port 8080`) or a path of two
# lower-case names (`/usr/bin/python3`) has a sign no random value's rest holds there, whatever its
# length (an environment dump's next variable was read as the value's end).
PROSE_FIRST = (
    r"(?:(?:[A-Za-z][a-z]{0,10}|[A-Z]{2,10})[.,;:!?)]?|\d[\d.:/-]{0,10}|[-+*$#>]{1,3}|\.\.\.|…)(?:[ \t]|\Z)"
    r"|(?:export[ \t]+)?[A-Za-z_][\w.-]*[ \t]?=(?=[^=\s])|(?:--[a-z][a-z0-9-]*|-[A-Za-z])(?:[ =]|\Z)"
    r"|/[a-z][\w.-]*/[a-z]"
)


# Base64 of text, as a Kubernetes secret's `data` or a registry's `.dockerconfigjson` holds it (a JSON
# document holding base64 of `user:password` in turn): a run of 16+ base64 characters standing alone,
# whole groups of four, in the standard alphabet or the URL-safe one (`-_` for `+/`, a JWT's or a
# signed cookie's). 16 is the shortest document a masking changes (`pwd=tulip9x1`, 12 bytes); a run
# this short decodes to printable text by chance about once in 10^5 runs, and the masking must change
# that text too. Found where the text's bytes, mapped by `_B64_BYTES`, hold 16 `a`s.
# Found as a maximal run of the alphabets' characters where the text's bytes, mapped by `_B64_BYTES`,
# hold 16 `a`s (`bytes.find`: a pattern tried at every place of a 37 KB eval record cost it 3-5 ms),
# then judged by its shape: whole groups of four, `=` padding at its end only.
_BASE64_TEXT = r"(?:[A-Za-z0-9+/_-]{4})*[A-Za-z0-9+/_-]{2}[A-Za-z0-9+/_=-]{2}"
_B64_BYTES = bytes(
    ord("a") if chr(i).isascii() and (chr(i).isalnum() or chr(i) in "+/_-=") else ord(" ") for i in range(256)
)
_B64_MARK = b"a" * 16
_URL_SAFE = str.maketrans("-_", "+/")


def mask_base64_text(text: str, masks: Callable[[str], str]) -> str:
    """`text` with each run of base64 that decodes to text `masks` changes masked whole: a credential
    inside a base64 document (a secret's JSON, a config file) is as readable as written plain, and no
    form of it is in the run (each character of base64 mixes two of the text's). Binary data (an image,
    a random key) decodes to no text and is left to the readers of keys."""
    text = mask_wrapped_base64(text, masks)
    spans = [(a, b) for a, b in _base64_runs(text) if _masks_decoded(text[a:b], masks)]
    return masked_spans(text, spans) if spans else text


def mask_wrapped_base64(text: str, masks: Callable[[str], str]) -> str:
    """`text` with each base64 document wrapped over lines (`base64` at 76 columns, MIME, a YAML block
    of it) masked whole when its text `masks` changes: each line alone decodes to part of the document,
    a value cut at its edge. Read before the readers of keys, which may mask one of its lines alone
    (a line of 76 random-looking characters) and leave the rest."""
    # One line, with its line break or not (an eval's record): no wrapped body, and no pass over its bytes.
    if text.find("\n", 0, len(text) - 1) < 0:
        return text
    runs = _base64_runs(text)
    if len(runs) < 2:
        return text
    spans = [
        span
        for chain in _wrapped(text, runs)
        if _masks_decoded("".join(text[a:b] for a, b in chain), masks)
        for span in chain
    ]
    return masked_spans(text, spans) if spans else text


def _base64_runs(text: str) -> list[tuple[int, int]]:
    """The spans of the runs of base64 standing alone in `text` (`_B64_BYTES`, `_BASE64_TEXT`)."""
    # One byte a character (any other than ASCII is `?`, no base64), so a byte's offset is the text's.
    marked = text.encode("ascii", "replace").translate(_B64_BYTES)
    spans, start = [], marked.find(_B64_MARK)
    while start >= 0:  # the leftmost 16 `a`s after the last run: a run's start
        end = marked.find(b" ", start)
        end = len(marked) if end < 0 else end
        # `_BASE64_TEXT` is whole groups of four: a run of another length is none, told without the
        # pattern (an eval record's ids and floats' digits, ~3 runs of 16+ a record).
        if (end - start) % 4 == 0 and re.fullmatch(_BASE64_TEXT, text[start:end]) is not None:
            spans.append((start, end))
        start = marked.find(_B64_MARK, end)
    return spans


def _masks_decoded(run: str, masks: Callable[[str], str]) -> bool:
    """`run` is base64 of printable text that `masks` changes."""
    decoded = _decoded_text(run)
    return decoded is not None and masks(decoded) != decoded


def base64_texts(text: str) -> list[tuple[str, str]]:
    """Each run of base64 standing alone in `text` that decodes to printable text, with that text (what
    pre-flight's reader of credentials reads again, as the masking does)."""
    return [(text[a:b], decoded) for a, b in _base64_runs(text) if (decoded := _decoded_text(text[a:b]))]


def _decoded_text(run: str) -> str | None:
    """The printable text `run` is base64 of, in either alphabet, or None."""
    if "-" in run or "_" in run:
        if "+" in run or "/" in run:  # two alphabets in one run: no encoder's
            return None
        run = run.translate(_URL_SAFE)
    try:
        decoded = base64.b64decode(run, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return decoded if all(c.isprintable() or c in "\n\r\t" for c in decoded) else None


def _wrapped(text: str, runs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The chains of 2+ `runs` that are each a whole line of consecutive lines, every line as wide as
    the first but the last (no wider), as an encoder wraps one base64 body."""
    chains, chain = [], []
    for start, end in runs:
        line = text.rfind("\n", 0, start) + 1
        whole = not text[line:start].strip(" \t") and (end == len(text) or text[end] in "\r\n")
        joins = (
            chain
            and whole
            and text[chain[-1][1] : line].strip() == ""
            and text.count("\n", chain[-1][1], line) == 1
            and chain[-1][1] - chain[-1][0] == chain[0][1] - chain[0][0] >= end - start
        )
        if joins:
            chain.append((start, end))
            continue
        if len(chain) >= 2:
            chains.append(chain)
        chain = [(start, end)] if whole else []
    if len(chain) >= 2:
        chains.append(chain)
    return chains


def mask_values(text: str, values: Iterable[str], is_random: Callable[[str], bool]) -> str:
    """`text` with each of `values` masked whole (longest first), folded over lines, and, where
    `is_random(value)`, any beginning or end of it at least `PIECE` long."""
    # Read once: `values` may be a generator (mask_revealed's), which the later passes would find empty.
    values = {v for v in values if v}
    ordered = sorted({form for v in values for form in encodings(v)}, key=len, reverse=True)
    for value in ordered:
        text = mask_whole_word(text, value) if _WORD.fullmatch(value) else text.replace(value, MASK)
    if "\\" in text or "%" in text or "&" in text or "''" in text or '""' in text:
        for value in values:
            text = _mask_escaped(text, value)
    # A value folded over lines keeps its first or its last 4 characters on one line.
    foldable = (
        [v for v in ordered if len(v) >= 4 and (v[:4] in text or v[-4:] in text)] if "\n" in text else []
    )
    if foldable:
        text = mask_folded(text, foldable)
    for value in values:
        if len(value) > PIECE and is_random(value):
            text = _mask_ends(text, value)
        if len(value) > EDGE and is_random(value):
            text = _mask_line_edges(text, value)
    # A value inside base64 of a document (base64 twice: a registry's `auth` in a `.dockerconfigjson`),
    # where `encodings` holds its base64 forms once only.
    return mask_base64_text(text, lambda decoded: mask_values(decoded, values, is_random)) if values else text


# A known value that reads as a word, or a word and a number (`postgres`, `changeme`, `admin123`: a
# database image's default password in a developer's environment): the word also stands inside longer
# ones (`postgresql://`, `admin1234`), which masking it there would shred. Such a value is masked where
# it stands whole: no letter or digit joined to it, but the last character of an escape before it (`\n`
# in JSON, `%3D` in a query). A value of any other look (mixed case, signs, random) is masked anywhere:
# it does not occur inside ordinary text by chance.
_WORD = re.compile(r"[A-Za-z]+[0-9]*")
_ESCAPE_BEFORE = re.compile(r"(?:\\[ntrfbv0]|%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2})\Z")


def mask_whole_word(text: str, value: str) -> str:
    """`text` with `value` masked where it stands whole (`_WORD`'s rule)."""
    pieces, done, at = [], 0, text.find(value)
    while at >= 0:
        end = at + len(value)
        joined_before = at > 0 and text[at - 1].isalnum() and not _ESCAPE_BEFORE.search(text, 0, at)
        if not joined_before and not text[end : end + 1].isalnum():
            pieces += [text[done:at], MASK]
            done = end
        at = text.find(value, end)
    return "".join(pieces) + text[done:] if pieces else text


@lru_cache(maxsize=1024)
def encodings(value: str) -> frozenset[str]:
    """`value` as written plain, escaped in JSON (ASCII or not), quoted in a URL, in a Python repr or
    for a shell (alone, or inside a quoted `key=value`), and, when it is long enough not to occur by
    chance, inside base64 (standard or URL-safe) and in hexadecimal (either case)."""
    shell = shlex.quote(value)
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        quote(value, safe=""),
        quote(value),
        quote_plus(value),
        repr(value)[1:-1],
        shell,
        shell[1:-1] if shell != value else shell,
    }
    if len(value) >= PIECE:
        forms |= _base64_cores(value)
    if len(value) >= EDGE:
        # Its bytes in hex, as `xxd -p`, `bytes.hex()` and a request's debug dump write them: 12+ digits
        # of one value do not occur by chance in a hash.
        forms |= {value.encode().hex(), value.encode().hex().upper()}
    return frozenset(form for form in forms if form)


# What no JSON or URL encoder escapes (RFC 3986's unreserved characters): written as themselves.
_AS_IS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def _mask_escaped(text: str, value: str) -> str:
    """`text` with `value` masked where an encoder other than Python's escaped it: JSON may write any
    character as `\\uXXXX` in either case (Go escapes `&<>`, .NET `+'` and every non-ASCII letter in
    capitals) and `/` as `\\/` (PHP, some Java), a URL's `%XX` may be in lower case, a bytes repr
    writes a non-ASCII letter as its UTF-8 bytes `\\xNN`, and one text may mix them; `encodings`
    holds the forms of Python's str encoders only."""
    pattern = _escaped(value)
    if pattern is None or not all(run in text for run in _runs(value)):
        return text
    return pattern.sub(MASK, text)


@lru_cache(maxsize=1024)
def _runs(value: str) -> tuple[str, ...]:
    """The runs of `value` every escaped form writes as they are: each is in a text holding one."""
    return tuple(run for run in re.split(r"[^A-Za-z0-9\-_.~]+", value) if run)


@lru_cache(maxsize=1024)
def _escaped(value: str) -> re.Pattern[str] | None:
    """Every form of `value` with each character an encoder may escape as itself or escaped, or None
    when it has none (the forms are then `value` itself)."""
    if all(c in _AS_IS for c in value):
        return None
    parts = []
    for c in value:
        if c in _AS_IS:
            parts.append(re.escape(c))
            continue
        # JSON writes a character beyond U+FFFF as two \\u escapes, one for each UTF-16 unit.
        units = c.encode("utf-16-be", "surrogatepass")
        utf8 = c.encode("utf-8", "surrogatepass")
        forms = [
            re.escape(c),
            "".join(r"\\u" + _hex(units[i : i + 2]) for i in range(0, len(units), 2)),
            "".join("%" + _hex(bytes([b])) for b in utf8),
        ]
        if not (c.isascii() and c.isprintable()):
            # A bytes repr (an HTTP body quoted as `raw[:500]!r`) writes each UTF-8 byte as \\xNN;
            # YAML's double-quoted style (PyYAML's default, without allow_unicode) and Python's
            # unicode_escape write the character's code point, as \\xNN up to FF, else \\uNNNN or \\UNNNNNNNN.
            forms.append("".join(r"\\x" + _hex(bytes([b])) for b in utf8))
            point = ord(c).to_bytes(4, "big")
            forms.append(r"\\x" + _hex(point[3:]) if ord(c) <= 0xFF else r"\\U" + _hex(point))
        if c.isascii() and not c.isalnum():
            # A backslash before a sign: JSON's `\"` and `\/`, a shell's `\!`, `\$`, `\ ` (printf %q,
            # a double-quoted word), Markdown's and a regex's escapes.
            forms.append(re.escape("\\" + c))
        forms += _QUOTED.get(c, [])
        forms.append("%25" + "%25".join(_hex(bytes([b])) for b in utf8))  # a URL quoted again (in a query)
        if c == " ":
            forms.append(r"\+")  # a query's space
        parts.append(f"(?:{'|'.join(forms)})")
    return re.compile("".join(parts))


# How a quoting writer other than Python's writes a quote or a markup sign inside a value: doubled
# (YAML's single-quoted style, PyYAML's for a string that needs quotes; SQL, PowerShell, CSV), closed,
# escaped and opened again (`'\''` as git and ssh quote for a shell, `'"'"'` as shlex does) or as an
# entity (html.escape, XML, Jinja).
_QUOTED = {
    "'": [re.escape(form) for form in ("''", "'\\''", "'\"'\"'", "&apos;", "&#39;")] + ["&#[xX]0*27;"],
    '"': [re.escape(form) for form in ('""', "&quot;", "&#34;")] + ["&#[xX]0*22;"],
    "&": ["&amp;", "&#38;", "&#[xX]0*26;"],
    "<": ["&lt;", "&#60;", "&#[xX]0*3[cC];"],
    ">": ["&gt;", "&#62;", "&#[xX]0*3[eE];"],
}


def _hex(data: bytes) -> str:
    """A pattern of `data` in hexadecimal digits of either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in data.hex())


def _base64_cores(value: str) -> set[str]:
    """What every base64 text holding `value` holds, whatever stands before and after it (HTTP Basic's
    `user:value`, a registry's `auth`, a Kubernetes secret): its encoding at each of the three byte
    offsets, less the characters that also encode the bytes around it."""
    raw = value.encode()
    cores = set()
    for shift, cut_start in ((0, 0), (1, 2), (2, 3)):
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        cut_end = (0, 3, 2)[(shift + len(raw)) % 3]  # the last group's characters that read what follows
        core = encoded[cut_start : len(encoded) - cut_end]
        cores |= {core, core.replace("+", "-").replace("/", "_")}
    return cores


def unfolded(text: str, word_starts: tuple[str, ...] = (), prose_apart: bool = False) -> str:
    """`text` with its line breaks, and the padding and borders around them, taken out: what a value
    folded over lines reads as. A line that begins with one of `word_starts`, or with a mapping's key
    (`eval_tiny:`, `"seed": 1`), is kept apart by a space: a renderer's fold inside a value leaves no
    key there, and joined, `max_new_tokens: 32768` and the next line's `eval_tiny:` read as a token
    named by its key (`t3rl show +experiment=quickstart` lost the line of its stage `eval_tiny`).
    A JSON Web Token's claims (`eyJ…`) after a line ending with its header's dot are its own: they join
    it (folded exactly at its `.eyJ`, a token read as two would be neither). With `prose_apart`, a line
    that begins as a record of its own (`PROSE_FIRST`: prose, an assignment, a flag, …) is kept apart
    too."""
    pieces = [text[a:b] for a, b in _segments(text)]
    key_first = re.compile(_KEY_FIRST).match  # once per text, not through re's cache once per line
    prose_first = re.compile(PROSE_FIRST).match if prose_apart else None
    return "".join(
        " " + piece
        if i
        and (
            (piece.startswith(word_starts) and not _claims_after_header(pieces[i - 1], piece))
            or key_first(piece)
            or (prose_first is not None and prose_first(piece))
        )
        else piece
        for i, piece in enumerate(pieces)
    )


def _claims_after_header(before: str, piece: str) -> bool:
    """`piece` begins a JSON Web Token's claims and `before` ends with its header and the dot."""
    return piece.startswith("eyJ") and before.endswith(".") and "eyJ" in before


def mask_folded(text: str, values: list[str]) -> str:
    """Each value whose characters `text` holds with line breaks between them, masked (the lines it
    spans joined)."""
    segments = _segments(text)
    joined = "".join(text[a:b] for a, b in segments)
    # A value with spaces (a passphrase) is also folded at them, as rich, textwrap and YAML fold words:
    # the line break takes the space's place and the padding around it is stripped with the break.
    spaced = [_spaces_foldable(v) for v in values if " " in v.strip(" ")]
    values = [v for v in values if v in joined]
    if not values and not any(pattern.search(joined) for pattern in spaced):  # the common case
        return text
    offsets = list(itertools.accumulate((b - a for a, b in segments), initial=0))  # of each in `joined`

    def where(at: int) -> int:  # the index in `text` of the character at `at` in `joined`
        piece = bisect.bisect_right(offsets, at) - 1
        return segments[piece][0] + at - offsets[piece]

    spans = []
    for value in values:
        at = joined.find(value)
        while at != -1:
            spans.append((where(at), where(at + len(value) - 1) + 1))
            at = joined.find(value, at + len(value))
    spans += [(where(m.start()), where(m.end() - 1) + 1) for p in spaced for m in p.finditer(joined)]
    return masked_spans(text, spans)


@lru_cache(maxsize=256)
def _spaces_foldable(value: str) -> re.Pattern[str]:
    """`value` with each run of its spaces there or not (unfolded text has none where a line broke)."""
    return re.compile(" *".join(re.escape(word) for word in value.strip(" ").split(" ") if word))


def _segments(text: str) -> list[tuple[int, int]]:
    """(start, end) in `text` of each line's content: without the padding and border before a line
    break, nor the indentation and border after one."""
    segments = []
    lines = text.split("\n")
    start = 0
    for i, line in enumerate(lines):
        a, b = start, start + len(line)
        # A line that neither begins nor ends with padding or a border is its own content (most lines).
        if i and line[:1] in _EDGES:
            a = b - len(_strip(line, str.lstrip))
        if i < len(lines) - 1 and line[-1:] in _EDGES:
            b = a + len(_strip(text[a:b], str.rstrip))
        segments.append((a, b))
        start += len(line) + 1
    return segments


def _strip(line: str, strip: Callable[[str, str], str]) -> str:
    """`line` without padding, one border character and the padding beyond it, at one end."""
    once = strip(line, " \t\r")
    twice = strip(once, _BORDERS)
    return strip(twice, " \t") if len(once) - len(twice) == 1 else once


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
    return masked_spans(text, spans)


def _mask_line_edges(text: str, value: str) -> str:
    """`text` with a beginning of `value` that ends a line, and an end of it that begins one, masked when
    `EDGE` characters or longer and not read as a word: a value a child folded over two lines, read by a
    line-by-line copier (a stage's log tee, a server's copier), arrives as two texts, and each piece of a
    value under 2 × `PIECE` characters may be too short for `_mask_ends`."""
    spans = []
    at = text.find(value[:EDGE])
    while at != -1:
        end = len(text[: _line_end(text, at)].rstrip(" \t\r"))
        if end - at < len(value) and text[at:end] == value[: end - at] and not _word(text[at:end]):
            spans.append((at, end))
        at = text.find(value[:EDGE], at + 1)
    at = text.find(value[-EDGE:])
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        start += len(text[start:at]) - len(text[start:at].lstrip(" \t"))
        piece = text[start : at + EDGE]
        if len(piece) < len(value) and value.endswith(piece) and not _word(piece):
            spans.append((start, at + EDGE))
        at = text.find(value[-EDGE:], at + 1)
    return masked_spans(text, spans) if spans else text


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end == -1 else end


def _word(piece: str) -> bool:
    """`piece` reads as a word (`correct`, `Horse`): a passphrase's word ending a line is left."""
    return re.fullmatch(r"[A-Z]?[a-z]+", piece) is not None


def masked_spans(text: str, spans: list[tuple[int, int]]) -> str:
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


# ------------------------------------------------------------------ a name's characters escaped
#
# Text read as it reads with the escapes of a name's characters undone (`api%5Fkey=V`, `"\u0074oken": "V"`).
#
# No encoder escapes a letter, a digit, `_`, `-` or `.`: they are RFC 3986's unreserved characters and
# JSON's, HTML's and Python's plain ones. A text that writes one escaped was written so by hand, to be read
# as the character (`%41PI_KEY=V` is `API_KEY=V` to whoever decodes it), so the masking reads it decoded:
# `ESCAPES` is the one table of the forms an escape takes, and `mask_escaped_names` masks in the text as
# written whatever the masking changes in its decoded reading. An escape of any other character (`%20`,
# `\u00e4`, `&#39;`) stays as it is: the readers of values take those forms already, and decoding them
# would change what a line's reader sees (a quote, a line break).

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
    """`text` with every escape of a name's character undone and a password's word in another language
    read as `password` (`t3rl_core.secret_name_words.OTHER_LANGUAGES`), and where each of its characters
    (and its end) begins in `text`; None when it holds neither."""
    decoding = _unescaped(text)
    english = names_in_english(text if decoding is None else decoding[0])
    if english is None or decoding is None:
        return english or decoding
    return english[0], [decoding[1][at] for at in english[1]]


def _unescaped(text: str) -> tuple[str, list[int]] | None:
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
