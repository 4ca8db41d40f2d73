"""Texts encoded from cached pieces, cut where the tokenizer always cuts its input.

Tool outputs repeat most of their text across calls and rows (BFCL's long-context worlds pad every
stock or route listing with the same ~30k characters of numbers), and a byte-level BPE tokenizer
spends ~1 µs per token on them (Qwen's pre-tokenisation makes each digit a piece of its own). A text
is therefore cut into pieces, each piece's ids kept, and only pieces never seen are encoded.

The cut is exact, not heuristic: it goes between a "," and a " " that is followed by a non-space.
For the tokenizers admitted here (`PieceEncoder.for_tokenizer`), the ids of the whole text are the ids
of its pieces joined:
- no added token contains ",", so no added token spans the cut, and none is anchored at it (an
  rstrip token ending at the ","; the piece after the cut starts with the " " an lstrip token would take
  in both cases);
- the normalizer is none or NFC, which composes nothing with a leading " " or a trailing ",";
- the pre-tokenizer is one of `_CUTTING_PATTERNS` followed by byte-level mapping (or GPT-2's byte-level
  pre-tokenizer): no alternative of these patterns matches a string holding "," then " " (letters after
  at most one non-letter; a punctuation run before optional newlines; whitespace runs; a space only
  before punctuation), so every match ends at or before the cut and the scan starts afresh at the " "
  exactly as it does at the start of the next piece; the only look-around, `\\s+(?!\\S)`, looks ahead of
  a whitespace run, which cannot end a piece that ends with ",";
- the model is BPE without dropout, which merges within a pre-token only; no truncation or padding.
When every added token matches alone (no stripping, no word boundary, not normalised), the text is
also cut at each of them: the tokenizer cuts its input at added tokens before anything else and
encodes the texts between them apart, so an observation's template text is kept and only its
content is encoded. tests/chat/test_pieces.py checks the joined ids against whole-text encodes of
every shipped family, on random texts built from the characters that matter and on real BFCL tool
outputs.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from itertools import chain
from operator import add
from typing import Any

# Texts shorter than this are encoded whole: cutting costs more than it can save. Above it even a
# short observation gains: its template text around the control tokens is kept, only its content is
# encoded (the loop's turn-delta CPU fell ~10 % against 1024 here).
MIN_CHARS = 128
# Pieces kept (by count and by ids in all: ~40 MB at most, an id being a tuple slot and most often
# an int of its own), the oldest dropped first; a piece longer than _MAX_PIECE_CHARS (text without
# cuts) is encoded every time.
_CACHE_PIECES = 1 << 16
_CACHE_TOKENS = 1 << 20
_MAX_PIECE_CHARS = 8192
# Where a text is cut: between "," and " " followed by a non-space (the text's characters all stay).
# Found from the ",", which the regex engine scans for, and captured, then joined back to the piece
# before it (`_cut`): the zero-width `(?<=,)(?= \S)` cuts at the same places, but its look-behind is
# tried at every character (~30 % slower on an eval's observations, all of which pass here).
_CUT_AFTER = re.compile(r"(,)(?= \S)")
# A ", " that is not a cut (the text's end is the other one).
_NOT_CUT = re.compile(r", \s")
# Pre-tokenisation patterns whose matches never hold "," then " " (see the module docstring): Qwen2/3's
# (one digit a piece) and Llama 3's, GLM-4's and DeepSeek's (up to three digits a piece).
_CUTTING_PATTERNS = frozenset(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|" + digits + r"| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
    for digits in (r"\p{N}", r"\p{N}{1,3}")
)
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}
_GPT2_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}


def _cut(text: str) -> list[str]:
    """`text` in pieces, each cut between a "," and a " " followed by a non-space (`_CUT_AFTER`)."""
    if ", " not in text:  # no cut can be there: a scan for ", " is far cheaper than the pattern's
        return [text]
    if "\0" not in text and not text.endswith(", ") and _NOT_CUT.search(text) is None:
        # Every ", " is a cut: marked and split at in two passes of C, ~2.5x faster than the
        # pattern's split on a long-context listing (~4,000 cuts in its ~30k characters).
        return text.replace(", ", ",\0 ").split("\0")
    parts = _CUT_AFTER.split(text)  # [piece, ",", piece, ",", …, last piece]
    if len(parts) == 1:
        return parts
    return [*map(add, parts[0:-1:2], parts[1::2]), parts[-1]]


def _admits_cuts(backend: Any) -> bool:
    """Whether `backend` (a `tokenizers.Tokenizer`) encodes a text cut by `_cut` as the whole (docstring)."""
    import json  # lazy: read only when a chat format is built

    if type(backend.model).__name__ != "BPE" or backend.model.dropout is not None:
        return False
    if backend.truncation is not None or backend.padding is not None:
        return False
    if backend.normalizer is not None and type(backend.normalizer).__name__ != "NFC":
        return False
    if any("," in token.content for token in backend.get_added_tokens_decoder().values()):
        return False
    if backend.pre_tokenizer is None:
        return False
    pre = json.loads(backend.pre_tokenizer.__getstate__())
    if pre.get("type") == "ByteLevel":
        return _matches(pre, _GPT2_BYTE_LEVEL)
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not isinstance(steps, list) or len(steps) != 2:
        return False
    split, byte_level = steps
    return (
        split.get("type") == "Split"
        and split.get("behavior") == "Isolated"
        and split.get("invert") is False
        and (split.get("pattern") or {}).get("Regex") in _CUTTING_PATTERNS
        and _matches(byte_level, _BYTE_LEVEL)
    )


def _matches(config: dict[str, Any], expected: dict[str, Any]) -> bool:
    return all(config.get(key) == value for key, value in expected.items())


class PieceEncoder:
    """Encodes long texts from kept pieces; `split` + `join` let a caller encode the new pieces elsewhere."""

    def __init__(
        self, encode_batch: Callable[[list[str]], list[list[int]]], controls: Sequence[str] = ()
    ) -> None:
        self._encode_batch = encode_batch
        self._ids: dict[str, tuple[int, ...]] = {}
        self._tokens = 0  # ids kept in `_ids`, in all
        self._lock = threading.Lock()  # `encode` may run in an encode worker while the loop runs `join`
        # Control tokens (added tokens that match alone, none of them stripping or normalised): the
        # tokenizer cuts its input at them before anything else and encodes the texts between them
        # apart, so a text is cut at them too (each one a piece of its own), and new pieces are
        # encoded in one call, joined by the first of them, its id then cutting the ids apart.
        ordered = sorted(controls, key=len, reverse=True)  # the longest match first, as the tokenizer
        self._controls = re.compile("(" + "|".join(map(re.escape, ordered)) + ")") if ordered else None
        separator_ids = encode_batch([controls[0]])[0] if controls else []
        self._separator = controls[0] if len(separator_ids) == 1 else None
        self._separator_id = separator_ids[0] if len(separator_ids) == 1 else -1

    @classmethod
    def for_tokenizer(
        cls, backend: Any, encode_batch: Callable[[list[str]], list[list[int]]] | None
    ) -> PieceEncoder | None:
        """A piece encoder over `encode_batch` when `backend` provably encodes cut texts as whole ones."""
        if backend is None or encode_batch is None or not _admits_cuts(backend):
            return None
        added = list(backend.get_added_tokens_decoder().values())
        isolated = not any(t.lstrip or t.rstrip or t.single_word or t.normalized for t in added)
        return cls(encode_batch, [token.content for token in added if token.content] if isolated else ())

    def split(self, text: str) -> tuple[list[str], list[str]]:
        """(the text's pieces, those whose ids are not kept: each once)."""
        if self._controls is None:
            pieces = _cut(text)
        else:
            pieces = []
            for segment in self._controls.split(text):
                if segment:
                    pieces += _cut(segment)
        kept = self._ids
        return pieces, [piece for piece in dict.fromkeys(pieces) if piece not in kept]

    def encode_new(self, new: list[str]) -> list[list[int]]:
        """The ids of each of the `new` pieces (those `split` found), in one encode when they can be
        joined by a control token whose id then appears only between them."""
        separator = self._separator
        if separator is None or len(new) < 2:
            return self._encode_batch(new)
        joined = self._encode_batch([separator.join(new)])[0]
        separator_id = self._separator_id
        parts: list[list[int]] = []
        start = 0
        for index, token_id in enumerate(joined):
            if token_id == separator_id:
                parts.append(joined[start:index])
                start = index + 1
        parts.append(joined[start:])
        return parts if len(parts) == len(new) else self._encode_batch(new)

    def join(self, pieces: Sequence[str], new: Sequence[str], new_ids: Sequence[Sequence[int]]) -> list[int]:
        """The text's ids from its pieces, `new_ids` being the ids of the `new` pieces (then kept)."""
        fresh = dict(zip(new, map(tuple, new_ids), strict=True))
        found = list(map(self._ids.get, pieces))
        if None in found:
            # A piece kept at `split` may have been dropped since (another text's new pieces): encoded now.
            gone = list(
                dict.fromkeys(
                    p for p, ids in zip(pieces, found, strict=True) if ids is None and p not in fresh
                )
            )
            if gone:
                fresh.update(zip(gone, map(tuple, self._encode_batch(gone)), strict=True))
            found = [fresh[p] if ids is None else ids for p, ids in zip(pieces, found, strict=True)]
        self._keep(fresh)
        return list(chain.from_iterable(found))

    def encode(self, text: str) -> list[int]:
        pieces, new = self.split(text)
        return self.join(pieces, new, self.encode_new(new) if new else [])

    def _keep(self, fresh: dict[str, tuple[int, ...]]) -> None:
        with self._lock:
            kept = self._ids
            for piece, ids in fresh.items():
                if len(piece) <= _MAX_PIECE_CHARS and piece not in kept:
                    kept[piece] = ids
                    self._tokens += len(ids)
            while len(kept) > _CACHE_PIECES or self._tokens > _CACHE_TOKENS:
                self._tokens -= len(kept.pop(next(iter(kept))))  # the oldest
