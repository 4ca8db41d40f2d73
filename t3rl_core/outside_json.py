"""JSON from outside t3rl, read under one declared limit: every body an HTTP server or client hands
t3rl, what a world's worker or a sandbox prints, a plugin's answer, a dataset's row, a model
directory's files.

Python's JSON reader recurses once per level: a body nested past its recursion limit (a broken proxy,
a hostile server, a row of 10,000 `[`) raised RecursionError in Python's words wherever it was read,
and a body nested just short of it parsed, then broke the next reader that recursed (repr, a copy, a
chat template, json.dumps when recorded). No answer t3rl reads nests anywhere near `MAX_DEPTH` (a
world's result and a tool call are held to `parsers.nesting.MAX_NESTING`, records wrap them a few
levels deeper); deeper text, or text longer than `MAX_BYTES`, is refused before it is parsed with
`OutsideJsonError`, a JSONDecodeError (every reader that refused text that is no JSON refuses it
alike) naming what was read and the limit. tests/architecture/test_outside_json.py keeps every parse of such
text in this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Levels of arrays and objects a JSON text from outside may open inside one another.
MAX_DEPTH = 256
# Bytes (characters, for text) of one JSON text from outside: an engine's answer with every token's
# log-probability is a few MB; the engine server accepts requests of this size too.
MAX_BYTES = 256 * 1024**2

# A JSON string, unrolled (several times faster than an alternation); its brackets are text.
_STRING = {
    bytes: re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL),
    str: re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL),
}
_OPENERS = {bytes: (b"[", b"{"), str: ("[", "{")}


class OutsideJsonError(json.JSONDecodeError):
    """JSON from outside nested deeper or longer than t3rl reads: a JSONDecodeError (so a ValueError,
    orjson's too), refused wherever text that is no JSON is, its message the whole of its words."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem, "", 0)

    def __str__(self) -> str:
        return self.msg

    def __reduce__(self) -> tuple[type[OutsideJsonError], tuple[str]]:
        return OutsideJsonError, (self.msg,)


def json_depth(text: str | bytes, limit: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in `text` (outside its strings), counted no further than
    `limit + 1` and without recursion: the innermost pairs are removed, a level a pass."""
    kind = bytes if isinstance(text, bytes | bytearray) else str
    square = _OPENERS[kind][0]
    outside = _STRING[kind].sub(kind(), bytes(text) if kind is bytes else text)
    if kind is bytes:
        brackets = outside.translate(_TO_SQUARE_BYTES, _NOT_BRACKET_BYTES)  # type: ignore[arg-type]
    else:
        brackets = re.sub(r"[^\[\]{}]+", "", outside).translate(_TO_SQUARE_STR)  # type: ignore[arg-type]
    pair = square + (b"]" if kind is bytes else "]")  # type: ignore[operator]
    depth = 0
    while brackets and depth <= limit:
        inner = brackets.replace(pair, kind())
        if len(inner) == len(brackets):
            break  # unbalanced: the parser says where
        brackets, depth = inner, depth + 1
    return depth


_TO_SQUARE_BYTES = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET_BYTES = bytes(c for c in range(256) if c not in b"[]{}")
_TO_SQUARE_STR = str.maketrans("{}", "[]")


def limit_problem(text: str | bytes, what: str) -> str | None:
    """Why `text`, JSON from outside, is not read; None when it is within the limit."""
    unit = "characters" if isinstance(text, str) else "bytes"
    if len(text) > MAX_BYTES:
        return (
            f"{what} is {len(text):,} {unit} of JSON; t3rl reads JSON from outside of at most "
            f"{MAX_BYTES:,} {unit} (t3rl_core.outside_json.MAX_BYTES)"
        )
    openers = _OPENERS[bytes if isinstance(text, bytes | bytearray) else str]
    # Text with at most MAX_DEPTH openers in all cannot nest deeper: not scanned (most bodies).
    if text.count(openers[0]) + text.count(openers[1]) <= MAX_DEPTH or json_depth(text) <= MAX_DEPTH:
        return None
    return _too_deep(what)


def _too_deep(what: str) -> str:
    return (
        f"{what} nests more than {MAX_DEPTH} levels deep; t3rl reads JSON from outside nested at most "
        f"{MAX_DEPTH} levels (t3rl_core.outside_json.MAX_DEPTH)"
    )


def loads(text: str | bytes | bytearray, what: str, parse: Callable[[Any], Any] = json.loads) -> Any:
    """`parse(text)` (json.loads, or orjson's, or a strict decoder's) once `text` is within the limit;
    OutsideJsonError naming `what` (the server and endpoint, the file, the row) when it is not, and
    json's own ValueError when it is no JSON."""
    problem = limit_problem(text, what)
    if problem is not None:
        raise OutsideJsonError(problem)
    try:
        return parse(text)
    except RecursionError:  # a stack already deep when it was read: the same refusal
        raise OutsideJsonError(_too_deep(what)) from None


def read_file(path: Path, encoding: str | None = None) -> Any:
    """The JSON in the file at `path` (its text as `Path.read_text` reads it), under the limit, the
    file named: a record edited by hand, a model's or a dataset's file."""
    return loads(path.read_text(encoding=encoding), str(path))
