"""Decoding from kept token bytes gives the tokenizer's own decode, invalid UTF-8 included."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Tokenizer, decoders

from t3rl_core.chat.byte_decode import ByteDecoder
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from tests.rollout.fakes import chat  # noqa: F401


def qwen_backend() -> Tokenizer:
    return Tokenizer.from_file(str(Path(shared_tokenizer_dir("qwen3")) / "tokenizer.json"))


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_decoded_ids_are_the_tokenizers_text(chat: ChatFormat, data: st.DataObject) -> None:  # noqa: F811
    backend = chat._backend
    assert chat._byte_decoder is not None
    size = backend.get_vocab_size(with_added_tokens=True)
    # Any ids: single bytes of multi-byte characters, control tokens, ids of no token at all.
    ids = data.draw(st.lists(st.integers(0, size + 5), max_size=40))
    assert chat.decode(ids) == backend.decode(ids, skip_special_tokens=False)
    text = data.draw(st.text(max_size=40))
    assert chat.decode(chat.encode(text)) == text


def test_an_added_token_outside_the_byte_alphabet_is_its_own_text() -> None:
    backend = qwen_backend()
    backend.add_tokens([AddedToken("two words é", special=False)])
    ids = backend.encode("x two words é y", add_special_tokens=False).ids
    decoder = ByteDecoder.for_tokenizer(backend)
    assert decoder is not None
    assert decoder.decode(ids) == backend.decode(ids, skip_special_tokens=False) == "x two words é y"


@pytest.mark.parametrize("decoder", [decoders.Metaspace(), decoders.WordPiece(), None])
def test_other_decoders_decode_with_the_tokenizer(decoder: decoders.Decoder | None) -> None:
    backend = qwen_backend()
    backend.decoder = decoder
    assert ByteDecoder.for_tokenizer(backend) is None
