"""How deep the brackets of a model's text may nest before any reader parses it.

Every reader of a tool call recurses once per level: Python's JSON decoder, SGLang's detectors (JSON,
partial JSON, `ast` for pythonic calls), and after them the world that runs the call, the chat template
that writes it back, copies and records. Arguments nested past Python's recursion limit (a model
writing 10,000 `[`) raised RecursionError in whichever came first: the model was shown Python's
"maximum recursion depth exceeded while decoding a JSON array", and a reader that caught it less
carefully would fail the episode as t3rl's bug. No tool's arguments nest anywhere near
`MAX_NESTING`; text nested deeper is refused before any reader sees it, with the limit named.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

# Levels of brackets ([, { and ( together) a model's text may open inside one another.
MAX_NESTING = 64

# A JSON string (its brackets are text, not nesting); an unterminated quote matches nothing.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}()]+")
_STEP = {"[": 1, "{": 1, "(": 1, "]": -1, "}": -1, ")": -1}


def nesting_depth(text: str) -> int:
    """The deepest level of brackets in `text` outside JSON strings; a closer without its opener goes
    no lower than the top level (closers before a deep call hide none of its depth)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(
        accumulate(map(_STEP.__getitem__, brackets), lambda depth, step: max(0, depth + step), initial=0)
    )


def nesting_problem(text: str) -> str | None:
    """Why `text` nests too deep for t3rl's readers; None when it does not. Text with at most
    MAX_NESTING openers in all (every answer and call of a usual turn) is let through uncounted."""
    if text.count("[") + text.count("{") + text.count("(") <= MAX_NESTING:
        return None
    depth = nesting_depth(text)
    if depth <= MAX_NESTING:
        return None
    return (
        f"brackets nested {depth} levels deep; t3rl reads tool calls nested at most {MAX_NESTING} "
        "levels (parsers.nesting.MAX_NESTING): write the arguments flatter"
    )


_CONTAINERS = (list, tuple, set, frozenset, dict)
_PLAIN = frozenset({list, tuple, dict})
_ATOMS = frozenset({str, int, float, bool, type(None)})
_SCANNED_BY_TYPE = 16


def structure_depth(value: object, limit: int = MAX_NESTING) -> int:
    """How deep lists, tuples, sets and mappings nest in `value` (a scalar: 0), counted without
    recursion and no further than `limit + 1`: a world's result nested 10,000 levels is measured
    where every recursive reader (json, repr, a chat template) would stop at Python's limit. Level by
    level (the containers a path of that length reaches), each level's containers picked out by one
    comprehension per container (a world's result is walked at every call)."""
    if not isinstance(value, _CONTAINERS):
        return 0
    level: list[Any] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return depth
        inner: list[Any] = []
        for item in level:
            members = item.values() if isinstance(item, dict) else item
            # A long plain list, tuple or dict of atoms only (bfcl-eval's long-context listings) is
            # ruled out by its types, in C, not by isinstance item by item.
            if (
                type(item) in _PLAIN
                and len(members) > _SCANNED_BY_TYPE
                and _ATOMS.issuperset(map(type, members))
            ):
                continue
            inner += [member for member in members if isinstance(member, _CONTAINERS)]
        # Each container once per level: a container held many times (or holding itself) is walked
        # once, where the level's list would grow with every path to it.
        level = list({id(member): member for member in inner}.values()) if len(inner) > 1 else inner
    return depth


def result_nesting_problem(value: object, what: str = "the tool's result") -> str | None:
    """Why `value`, a world's result, nests too deep to be written as text; None when it does not."""
    depth = structure_depth(value)
    if depth <= MAX_NESTING:
        return None
    return (
        f"{what} nests more than {MAX_NESTING} levels deep; t3rl passes results nested at most "
        f"{MAX_NESTING} levels (parsers.nesting.MAX_NESTING), like the tool calls it reads"
    )
