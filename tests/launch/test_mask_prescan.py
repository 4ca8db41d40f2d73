"""The masks' pre-scans (issue 26 row 1: every eval record's line is masked in the record child, which
shares a core with the event loop when one is kept busy) change what is read, never what is masked.

`golden/mask_corpus.json.gz` holds 2,772 texts with what `mask_text`, `mask_episode_text` and
`credentials_in` answered for each at 8360fe77, before the pre-scans: 2,700 texts those three functions
were handed while the secret hunt tests ran (waves three to eight, the kinds, leaks and red-team modules,
names, planted secrets; 2,200 of the texts something was masked or found in, 500 of those it was not,
drawn with a fixed seed; at most 2,000 characters each) and the masked parts of 24 eval records of
`benchmarks/eval_concurrency.py`'s eval (each record's other fields' JSON and its two episode texts).
A row added to a table later may mask more of these texts: record the corpus's answers again from the
tree before a pre-scan's change, never from the tree after it.
The recorded answers are the oracle: no second implementation of the old reading is kept here.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

from t3rl_core import secret, secret_commands, secret_pieces, secret_shapes
from t3rl_core.secret import mask_episode_text, mask_text
from t3rl_core.secret_shapes import credentials_in

CORPUS = Path(__file__).parent / "golden" / "mask_corpus.json.gz"


@pytest.fixture(scope="module")
def corpus() -> list[list]:
    return json.loads(gzip.decompress(CORPUS.read_bytes()))


def test_the_corpus_masks_as_recorded(corpus: list[list]) -> None:
    changed = [
        (text[:120], name)
        for text, masked, episode, found in corpus
        for name, now, then in (
            ("mask_text", mask_text(text), masked),
            ("mask_episode_text", mask_episode_text(text), episode),
            ("credentials_in", credentials_in(text), found),
        )
        if now != then
    ]
    assert not changed, changed[:10]


# ------------------------------------------------------------------ the pre-scans are made from the tables


def _shapes_with(old: str, new: str) -> ModuleType:
    """t3rl_core.secret_shapes executed again with `old` of its source replaced by `new`, as a module of
    its own (the imported one untouched): a table as a later change may extend it."""
    source = Path(secret_shapes.__file__).read_text(encoding="utf-8")
    assert source.count(old) == 1
    module = ModuleType("secret_shapes_extended")
    exec(compile(source.replace(old, new), secret_shapes.__file__, "exec"), module.__dict__)
    return module


def test_an_issuer_added_to_the_table_is_found_by_the_run_scan() -> None:
    # `qz` heads no start of the shipped table: the scan's heads are made from the row, or it is skipped.
    assert b"qz" not in secret_shapes._START_HEADS
    row = '    ("Made up", ("qzk_",), r"qzk_[A-Za-z0-9]{30,}", r"qzk_"),\n)  # fmt: skip\n_PREFIXED'
    shapes = _shapes_with(")  # fmt: skip\n_PREFIXED", row)
    token = "qzk_" + "Ab3" * 12
    for text in (f"key {token} end", f'{{"note": "{token}"}}', f"x/{token}"):
        assert shapes._may_hold_token(text), text
        assert token not in shapes.mask_issued(text), text
        assert not secret_shapes._may_hold_token(text)  # the shipped table has no such row


def test_a_suffix_added_to_the_table_is_read_after_a_name() -> None:
    # `_value_may_follow` reads the suffixes by their first letter: one beginning with a letter no other
    # does (`qq`) is read from the table, or the value after `tokenqq:` is not seen.
    text = "tokenqq: Abcdef123456"
    assert not secret_shapes._value_may_follow(text, 5)
    shapes = _shapes_with('    *PASS_ENDINGS, "s",\n', '    *PASS_ENDINGS, "s", "qq",\n')
    assert shapes._value_may_follow(text, 5)


@pytest.mark.parametrize("length", range(1, 41))
def test_base64_runs_are_whole_groups_of_four(length: int) -> None:
    # `_base64_runs` tries the pattern only on runs whose length is a multiple of four.
    run = ("QUJD" * 11)[:length]
    assert (re.fullmatch(secret_pieces._BASE64_TEXT, run) is not None) == (length % 4 == 0)


# What `mask_url` answered at 8360fe77 (before the pre-scan of `bare_userinfo_spans`), the window's
# edges and the password's shortest and longest among them.
BARE = "a" * 400 + " alice:" + "p" * 250 + "@h.example.com"
NO_SPACE_BEFORE = "b" * 400 + ":" + "p" * 80 + "@h.example.com"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("db alice:Tr0ub4dor9@db.example.com", "db alice:***@db.example.com"),
        ("db alice:x@db.example.com", "db alice:***@db.example.com"),
        ("x=//bob:hunter2x@h.example.org/app", "x=//bob:***@h.example.org/app"),
        ("mail john@example.com: note:a b@c.example.com", "mail john@example.com: note:a b@c.example.com"),
        (BARE, "a" * 400 + " alice:***@h.example.com"),
        (" alice:" + "p" * 256 + "@h.example.com", " alice:***@h.example.com"),
        (" alice:" + "p" * 257 + "@h.example.com", " alice:" + "p" * 257 + "@h.example.com"),
        (NO_SPACE_BEFORE, NO_SPACE_BEFORE),
    ],
)
def test_bare_userinfo_prescan_masks_as_before(text: str, masked: str) -> None:
    assert secret.mask_url(text) == masked


@pytest.mark.parametrize("suffix", secret_shapes._SUFFIXES)
def test_every_suffix_is_read_after_a_name(suffix: str) -> None:
    # Each suffix of the table, lower and upper case, and one read as `re` reads `ſ` (`s`), a non-ASCII
    # head: the value after it is seen.
    assert secret_shapes._value_may_follow(f"token{suffix}: Abcdef123456", 5)
    assert secret_shapes._value_may_follow(f"TOKEN{suffix.upper()}=Abcdef123456", 5)
    assert secret_shapes._value_may_follow(f"token{suffix.replace('s', chr(0x17F))}: Abcdef123456", 5)


@pytest.mark.parametrize("document", ["pwd=tulip9x1", "password=tulip9x1ab", "api_key=Tr0ub4dor9xyz1"])
def test_base64_of_a_credential_is_masked_whatever_its_groups(document: str) -> None:
    # Runs of 16, 28 and 32 characters (4 and 0 modulo 8): each is read.
    run = base64.b64encode(document.encode()).decode()
    assert mask_text(f"data {run} end") == "data *** end"


def _commands_with(old: str, new: str) -> ModuleType:
    """t3rl_core.secret_commands executed again with `old` of its source replaced by `new`."""
    source = Path(secret_commands.__file__).read_text(encoding="utf-8")
    assert source.count(old) == 1
    module = ModuleType("secret_commands_extended")
    exec(compile(source.replace(old, new), secret_commands.__file__, "exec"), module.__dict__)
    return module


def _reads_stdin(commands: ModuleType, text: str) -> bool:
    """`command_spans(text)` reads `text` for a standard input's reader (the `-` gate let it through)."""
    read: list[str] = []
    commands.stdin_spans = lambda text: read.append(text) or []  # the module's own global, for this call
    commands.command_spans(text)
    return bool(read)


@pytest.mark.parametrize("added", ["", "-qzstdin", "qzstdin"])
def test_every_stdin_marker_passes_the_dash_gate(added: str) -> None:
    # Each marker of the table, and one added to it with a `-` or without: its text is read.
    old = '"-passin")\n'
    commands = _commands_with(old, f'"-passin", "{added}")\n') if added else _commands_with(old, old)
    for marker in commands._STDIN_MARKERS:
        assert _reads_stdin(commands, f"x {marker} y"), marker
    assert not _reads_stdin(commands, "x plain text y")


def test_every_option_start_and_header_word_passes_the_dash_gate() -> None:
    for start in secret_commands._OPTION_STARTS:
        assert secret_commands._may_hold_command(f"run {start}pV"), start
    shapes = _shapes_with('"cookie", "digest ")\n', '"cookie", "digest ", "x-qz-auth")\n')
    for word in shapes._HEADER_WORDS:
        assert shapes._has_header(f"{word}: Abcdef123456"), word
    assert not shapes._has_header("x-qz: abc")


COLONS = ["", ":", "a:b:c", "a:b:c:d", ":::", "::::", "h:5432:db:u:V", "x" * 50 + "::::"]


@pytest.mark.parametrize("text", COLONS)
@pytest.mark.parametrize("count", [1, 3, 4, 5])
def test_colons_found_one_by_one_answer_as_the_count(text: str, count: int) -> None:
    assert secret_commands._holds_colons(text, count) == (text.count(":") >= count)


def test_a_pgpass_line_with_its_four_colons_is_masked() -> None:
    assert mask_text("db.example.com:5432:app:alice:Tr0ub4dor9") == "db.example.com:5432:app:alice:***"


def test_a_run_read_again_answers_as_the_first_time() -> None:
    # `_may_hold_token` keeps the runs that hold no token (not those that do): a text read again, or
    # another text with the same run, answers as before.
    token = "hf_" + "Ab3" * 11
    for _ in range(2):
        assert secret_shapes._may_hold_token(f"use {token} here")
        assert not secret_shapes._may_hold_token("the file current_working_directory_2023.docx")
    assert token.encode() not in secret_shapes._TOKENLESS_RUNS
    assert b"current_working_directory_2023.docx" in secret_shapes._TOKENLESS_RUNS


def test_the_runs_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_shapes, "_TOKENLESS_RUNS", set())
    monkeypatch.setattr(secret_shapes, "_MOST_TOKENLESS_RUNS", 8)
    for number in range(30):
        assert not secret_shapes._may_hold_token(f"name_of_a_long_file_{number:04d}.txt")
        assert len(secret_shapes._TOKENLESS_RUNS) <= 8
