"""Long texts encoded from kept pieces: the ids of a whole-text encode, for every admitted tokenizer."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import AddedToken, Regex, Tokenizer, normalizers, pre_tokenizers

from t3rl_core.chat import pieces
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.pieces import MIN_CHARS, PieceEncoder
from t3rl_core.chat.tiny import shared_tokenizer_dir
from tests.rollout.fakes import chat, qwen_chat  # noqa: F401

# What decides where a byte-level BPE tokenizer cuts: commas, spaces, newlines, digits, letters,
# contractions, punctuation runs, combining marks (NFC), non-Latin text and control tokens.
FRAGMENTS = [
    ",", ", ", " ", "  ", "\n", "\r\n", "\t", " \n", ",\n", "0", "12", "345", "6.75", "-8", "a", "word",
    "Word", "'s", "'LL", " x", "é", "e\u0301", "\u0301", "中文", "🎉", '"', "[", "]", "{", "}", ": ",
    "<", ">", "</", "_", "(", ")", "\\n", "null", "true",
]  # fmt: skip
LLAMA3_PATTERN = next(p for p in pieces._CUTTING_PATTERNS if r"\p{N}{1,3}" in p)


@functools.cache
def variant(name: str) -> Tokenizer:
    """VARIANTS' tokenizer `name`, built once per process (each example of a property test reads it)."""
    return VARIANTS[name]()


def whole(backend: Tokenizer, text: str) -> list[int]:
    return backend.encode(text, add_special_tokens=False).ids


def batch_of(backend: Tokenizer) -> Callable[[list[str]], list[list[int]]]:
    return lambda texts: [e.ids for e in backend.encode_batch_fast(texts, add_special_tokens=False)]


def texts_of(controls: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(FRAGMENTS + controls), min_size=1, max_size=120).map("".join)


def qwen_backend() -> Tokenizer:
    return Tokenizer.from_file(str(Path(shared_tokenizer_dir("qwen3")) / "tokenizer.json"))


def qwen_with(change: Callable[[Tokenizer], object]) -> Callable[[], Tokenizer]:
    """The tiny Qwen tokenizer changed by `change`, built when called: the cases below are named at
    collection, which builds nothing (the tiny tokenizer imports transformers: ~1 s per process, and every
    xdist worker collects the whole suite)."""

    def build() -> Tokenizer:
        backend = qwen_backend()
        change(backend)
        return backend

    return build


def split_then_bytes(pattern: str) -> pre_tokenizers.PreTokenizer:
    """Cut at `pattern`, then map bytes to byte-level symbols (no regex of ByteLevel's own)."""
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


# The tiny Qwen tokenizer with each admitted pre-tokenizer and normalizer.
VARIANTS = {
    "llama3 digits": qwen_with(lambda t: setattr(t, "pre_tokenizer", split_then_bytes(LLAMA3_PATTERN))),
    "gpt2 byte-level": qwen_with(
        lambda t: setattr(
            t, "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        )
    ),
    "nfc": qwen_with(lambda t: setattr(t, "normalizer", normalizers.NFC())),
}


def test_every_shipped_family_encodes_long_texts_from_pieces(chat: ChatFormat) -> None:  # noqa: F811
    assert chat._pieces is not None
    text = ", ".join(f"{i * 7.25}" for i in range(400))
    assert chat.encode(text) == whole(chat._backend, text)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_joined_pieces_are_the_whole_encode(chat: ChatFormat, data: st.DataObject) -> None:  # noqa: F811
    controls = list(chat.tokenizer.all_special_tokens) + list(chat.family.tag_tokens if chat.family else ())
    text = data.draw(texts_of(controls))
    encoder = PieceEncoder.for_tokenizer(chat._backend, chat._encode_batch)
    assert encoder is not None and encoder._controls is not None  # cut at control tokens too
    assert encoder.encode(text) == whole(chat._backend, text)
    # Again, with pieces kept from another text sharing fragments.
    other = data.draw(texts_of(controls))
    encoder.encode(other)
    assert encoder.encode(text) == whole(chat._backend, text)


# The cut's definition: between a "," and a " " followed by a non-space, every character kept.
ZERO_WIDTH_CUT = re.compile(r"(?<=,)(?= \S)")
# Around the cut: commas, spaces and other whitespace (Unicode's too), letters, digits, line ends.
CUT_FRAGMENTS = [",", " ", ", ", ",,", "  ", "\t", "\n", "\u3000", "\xa0", "a", "1", "é", ",\n", ", ,"]


@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from(CUT_FRAGMENTS), max_size=40).map("".join))
def test_the_cut_is_the_zero_width_definition(text: str) -> None:
    assert pieces._cut(text) == ZERO_WIDTH_CUT.split(text)


@pytest.mark.parametrize("name", sorted(VARIANTS))
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_every_admitted_tokenizer_kind_encodes_pieces_as_the_whole(name: str, data: st.DataObject) -> None:
    backend = variant(name)
    encoder = PieceEncoder.for_tokenizer(backend, batch_of(backend))
    assert encoder is not None
    text = data.draw(texts_of(["<|im_start|>", "<|im_end|>", "<tool_response>"]))
    assert encoder.encode(text) == whole(backend, text)


# Tokenizers for which a cut text is not provably the whole: none may take the piece path.
REFUSED = {
    "lowercasing normalizer": qwen_with(lambda t: setattr(t, "normalizer", normalizers.Lowercase())),
    "added token with a comma": qwen_with(lambda t: t.add_tokens([AddedToken("a, b", special=False)])),
    "other pattern": qwen_with(lambda t: setattr(t, "pre_tokenizer", split_then_bytes(r",\s|\s?\w+|\W"))),
    "prefix space": qwen_with(
        lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True))
    ),
    "whitespace pre-tokenizer": qwen_with(lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Whitespace())),
    "truncation": qwen_with(lambda t: t.enable_truncation(64)),
    "dropout": qwen_with(lambda t: setattr(t.model, "dropout", 0.5)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_tokenizers_that_may_encode_a_cut_text_otherwise_are_refused(case: str) -> None:
    backend = REFUSED[case]()
    assert PieceEncoder.for_tokenizer(backend, batch_of(backend)) is None


def test_the_cut_matters_for_a_refused_pattern() -> None:
    """The admission is not vacuous: under a pattern that reads across ", " the joined ids differ."""
    backend = REFUSED["other pattern"]()
    text = "alpha, the, and, that, is, the, file"
    assert PieceEncoder(batch_of(backend)).encode(text) != whole(backend, text)


def test_a_repeated_long_text_encodes_only_its_new_pieces(qwen_chat: ChatFormat) -> None:  # noqa: F811
    fresh = ChatFormat(qwen_chat.tokenizer, template=qwen_chat.template, family_=qwen_chat.family)
    assert fresh._pieces is not None
    encoded: list[list[str]] = []
    original = fresh._encode_batch
    fresh._encode_batch = fresh._pieces._encode_batch = lambda texts: encoded.append(texts) or original(texts)
    listing = ", ".join(f"{200 + i * 0.37:.2f}" for i in range(MIN_CHARS // 4))
    first, second = f'{{"price": 12.5, "MA": [{listing}]}}', f'{{"price": 730.25, "MA": [{listing}]}}'
    assert fresh.encode(first) == whole(fresh._backend, first)
    assert fresh.encode(second) == whole(fresh._backend, second)
    assert encoded[1] == ['{"price": 730.25,']  # the listing's pieces were kept
    third = second.replace("730.25", "731.5")
    assert asyncio.run(fresh.encode_async(third)) == whole(fresh._backend, third)
    assert encoded[2] == ['{"price": 731.5,'] and len(encoded) == 3


def test_a_piece_dropped_before_the_join_is_encoded_again(
    qwen_chat: ChatFormat,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    encoder = PieceEncoder(qwen_chat._encode_batch)
    text = ", ".join(f"item{i}" for i in range(50))
    encoder.encode(text)
    split, new = encoder.split(text)
    assert not new
    monkeypatch.setattr(pieces, "_CACHE_PIECES", 3)
    encoder.encode("other, texts, fill, the, cache")  # drops the text's pieces
    assert encoder.join(split, [], []) == whole(qwen_chat._backend, text)


def test_kept_pieces_stay_within_their_budgets(
    qwen_chat: ChatFormat,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pieces, "_CACHE_PIECES", 40)
    monkeypatch.setattr(pieces, "_CACHE_TOKENS", 150)
    encoder = PieceEncoder(qwen_chat._encode_batch)
    for round_ in range(5):
        text = ", ".join(f"value{round_}x{i}" for i in range(30))
        assert encoder.encode(text) == whole(qwen_chat._backend, text)
        kept = encoder._ids
        assert len(kept) <= 40 and encoder._tokens == sum(map(len, kept.values())) <= 150


def test_a_long_text_without_cuts_is_not_kept(qwen_chat: ChatFormat) -> None:  # noqa: F811
    encoder = PieceEncoder(qwen_chat._encode_batch)
    text = "no cut here " * (pieces._MAX_PIECE_CHARS // 10)
    assert encoder.encode(text) == whole(qwen_chat._backend, text)
    assert not encoder._ids


def test_bfcl_like_json_lists_encode_as_the_whole(chat: ChatFormat) -> None:  # noqa: F811
    outputs = [
        {"price": 457.23, "MA(5)": [round(200 + (i * 37 % 50) + i / 100, 2) for i in range(900)]},
        {"intermediaryCities": [f"City {i}, Valley" for i in range(300)], "distance": 980.0},
        {"content": "line one, two\n  indented, three\n\nend, ", "tags": ["#a", "#b"], "n": None},
    ]
    for output in outputs:
        text = chat._turn_end_text(None, [{"role": "tool", "content": json.dumps(output)}], True)
        assert chat.encode(text) == whole(chat._backend, text)
        assert asyncio.run(chat.encode_async(text)) == whole(chat._backend, text)


def test_new_pieces_are_encoded_in_one_call_cut_at_the_separator(qwen_chat: ChatFormat) -> None:  # noqa: F811
    calls: list[list[str]] = []
    encoder = PieceEncoder.for_tokenizer(
        qwen_chat._backend, lambda texts: calls.append(texts) or qwen_chat._encode_batch(texts)
    )
    assert encoder is not None
    text = '\n<|im_start|>user\n<tool_response>\n{"a": 1, "b": [2, 3]}\n</tool_response><|im_end|>\n'
    calls.clear()
    assert encoder.encode(text) == whole(qwen_chat._backend, text)
    assert len(calls) == 1 and len(calls[0]) == 1  # every new piece, joined
    assert encoder.encode(text.replace("user", "system")) == whole(
        qwen_chat._backend, text.replace("user", "system")
    )
    assert calls[1] == ["system\n"]  # the template's pieces and the content were kept


def test_a_stripping_added_token_keeps_control_tokens_inside_the_pieces() -> None:
    backend = qwen_backend()
    backend.add_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    encoder = PieceEncoder.for_tokenizer(backend, batch_of(backend))
    assert encoder is not None and encoder._controls is None
    text = "a, b  <mask> c<|im_end|>\n<|im_start|>d, e"
    assert encoder.encode(text) == whole(backend, text)
