"""Token ids → text for byte-level BPE tokenizers, from a table of each id's bytes.

Every model call's ids are decoded into the text the parser reads. Inside the episode loop the
tokenizer's own decode costs ~40 µs for a ~40-token call (its code and tables are cold between calls;
~6 µs in a tight loop); joining kept bytes costs a few µs. The result is the tokenizer's: with a
byte-level decoder, `Tokenizer.decode` maps each id to its token (added tokens first, unknown ids
dropped), each token's characters back to the bytes they stand for (a token with a character outside
the byte alphabet, such as an added token with a space, is taken as its UTF-8 bytes), joins all the
bytes and decodes them once, each maximal invalid UTF-8 subsequence becoming U+FFFD; Python's UTF-8
decoder with errors="replace" replaces the same subsequences. tests/chat/test_byte_decode.py checks
it against the tokenizer on random ids (partial characters included) for every shipped family.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any


@cache
def _byte_of_char() -> dict[str, int]:
    """The byte-level alphabet: printable Latin-1 bytes stand for themselves, the other bytes for
    the characters from U+0100 on, in byte order."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    kept = set(printable)
    others = [byte for byte in range(256) if byte not in kept]
    return {chr(byte): byte for byte in printable} | {chr(256 + n): byte for n, byte in enumerate(others)}


class ByteDecoder:
    """`decode(ids)`: the text `backend.decode(ids, skip_special_tokens=False)` gives."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._bytes: dict[int, bytes] = {}

    @classmethod
    def for_tokenizer(cls, backend: Any) -> ByteDecoder | None:
        """A byte decoder when `backend` (a `tokenizers.Tokenizer`) decodes with a byte-level decoder."""
        if backend is None or type(getattr(backend, "decoder", None)).__name__ != "ByteLevel":
            return None
        return cls(backend)

    def decode(self, ids: Sequence[int]) -> str:
        table = self._bytes
        try:
            return b"".join(map(table.__getitem__, ids)).decode("utf-8", "replace")
        except KeyError:
            for token_id in ids:
                if token_id not in table:
                    table[token_id] = self._token_bytes(token_id)
            return b"".join(map(table.__getitem__, ids)).decode("utf-8", "replace")

    def _token_bytes(self, token_id: int) -> bytes:
        token = self._backend.id_to_token(token_id)  # an id that is no token's decodes to nothing
        if token is None:
            return b""
        byte_of = _byte_of_char()
        if all(char in byte_of for char in token):
            return bytes(byte_of[char] for char in token)
        return token.encode()
