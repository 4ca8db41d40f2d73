"""Reference rewards' format regexes, matched in linear time.

ToolRL's and ReTool's format checks are `re.search(pattern, text, re.DOTALL)` with patterns made of
literal pieces and `.*` / `.*?` gaps (`^<think>.*?</think>\\n<tool_call>\\n.*?\\n</tool_call>…$`).
Python's backtracking engine takes cubic time on a text that repeats the pieces without matching:
18 kB of a repeated ToolRL call block took 8 s, 4 kB of repeated `<answer>\\boxed{}}` 13 s for ReTool's
pattern, all of it on the episode loop, where every episode waits (and a degenerate, repeating output
is what a policy writes early in training). `GappedPattern` reads such a pattern once, refuses any
other construct, and decides a match by placing each piece at its earliest position after the previous
one: with gaps that match anything, the earliest placement leaves the most room for what follows, so it
finds a match exactly when `re.search` does (tests/rewards/test_gapped.py compares them).
"""

from __future__ import annotations

import re

# A gap: any text (DOTALL), greedy or lazy; existence of a match does not depend on which.
_GAP = re.compile(r"\.\*\??")
# What a literal piece may hold: characters and the escapes `\\`, `\{`, `\}`, `\n`.
_ESCAPES = {"\\\\": "\\", "\\{": "{", "\\}": "}", "\\n": "\n"}
_SPECIAL = set(".^$*+?{}[]()|\\")


class GappedPattern:
    """`[^]PIECE(.*PIECE)*[$]` with `.`, `^`, `$` as in `re.search(…, re.DOTALL)` without MULTILINE."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.anchored = pattern.startswith("^")
        self.at_end = pattern.endswith("$") and not pattern.endswith("\\$")
        body = pattern[int(self.anchored) : len(pattern) - int(self.at_end)]
        self.pieces = [_literal(piece, pattern) for piece in _GAP.split(body)]
        if not self.pieces[0] or not self.pieces[-1]:
            raise ValueError(f"{pattern!r}: a gapped pattern starts and ends with a literal piece")

    def search(self, text: str) -> bool:
        """Whether `re.search(self.pattern, text, re.DOTALL)` finds a match."""
        first, *rest = self.pieces
        if self.anchored:
            position = len(first) if text.startswith(first) else -1
        else:
            found = text.find(first)
            position = found + len(first) if found >= 0 else -1
        if position < 0:
            return False
        if not rest:
            if not self.at_end:
                return True
            return position in _ends(text) if self.anchored else _last_at_end(text, 0, first)
        *middle, last = rest
        for piece in middle:
            found = text.find(piece, position)
            if found < 0:
                return False
            position = found + len(piece)
        return _last_at_end(text, position, last) if self.at_end else text.find(last, position) >= 0


def _ends(text: str) -> list[int]:
    """Where `$` matches: the end, and before a final newline."""
    return [len(text), len(text) - 1] if text.endswith("\n") else [len(text)]


def _last_at_end(text: str, position: int, last: str) -> bool:
    """Whether `last` starts at or after `position` and ends where `$` matches."""
    return any(end - len(last) >= position and text[end - len(last) : end] == last for end in _ends(text))


def _literal(piece: str, pattern: str) -> str:
    out, i = [], 0
    while i < len(piece):
        escape = piece[i : i + 2]
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            i += 2
        elif piece[i] in _SPECIAL:
            raise ValueError(f"{pattern!r}: {piece[i]!r} is not a literal nor a .* gap")
        else:
            out.append(piece[i])
            i += 1
    return "".join(out)
