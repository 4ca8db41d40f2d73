"""`_may_hold_token` reads only the long runs of a token's characters (#26 row 1: the masks of every eval
record): the same answer as its plain definition, for every text, so every credential masked before
still is."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core import secret_shapes
from t3rl_core.secret_shapes import ISSUERS, mask_issued, mask_shapes

STARTS = [start for _, starts, _, _ in ISSUERS for start in starts]
NAME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def plain(text: str) -> bool:
    """At some place a start stands, not after a letter, digit, `_` or `-`, followed by a run of token
    characters 15 long or reaching an ellipsis (`…` after it, `...` in it)."""
    for at in range(len(text)):
        if any(text.startswith(start, at) for start in STARTS) and (at == 0 or text[at - 1] not in NAME):
            end = re.compile(r"[A-Za-z0-9_.+/=%-]*").match(text, at).end()
            if end - at >= 15 or text.startswith("…", end) or "..." in text[at:end]:
                return True
    return False


# Starts, what may stand before and inside them, runs' separators, words of every length around 15,
# ellipses, non-ASCII characters and a lone surrogate (a record's text may hold one).
AROUND = ["a", "Ab3", "9f", "a" * 6, "b" * 11, "_", "-", ".", "+", "/", "=", "%", "%2B", "..", "..."]
AROUND += ["…", " ", '"', "'", "\n", "\\n", "é", "\u4e2d", "\ud800", ":", ",", "task"]
PIECES = st.sampled_from([*STARTS, *AROUND])


# Five texts an example: Hypothesis's own work per example (~1.7 ms) was nearly all the test's CPU. 3,000
# texts as before. Mutations of `_may_hold_token` 3,000 single texts caught (a run's length or a
# start's room off by one, `...` not scanned, a character dropped from a run's or a start's set, no
# start at a run's beginning) these catch; a run's end looked for one place late, only with the case of
# a run of exactly 15 in test_runs_at_the_edges_and_inside (400 single texts let four pass, 300 of ten
# three).
@settings(max_examples=600, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=24).map("".join), min_size=5, max_size=5))
def test_the_answer_is_the_plain_definition_s(texts: list[str]) -> None:
    for text in texts:
        assert secret_shapes._may_hold_token(text) == plain(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_any_text_answers_as_the_plain_definition(text: str) -> None:
    assert secret_shapes._may_hold_token(text) == plain(text), text


def test_runs_at_the_edges_and_inside() -> None:
    body = "Ab3" * 5
    cases = {
        f"sk-{body}": True,  # the text's start
        f"x sk-{body}": True,
        f"x.sk-{body}": True,  # after a run character that is not a name's
        f"x=sk-{body}": True,
        f"xsk-{body}": False,  # inside a word
        f"x-sk-{body}": False,
        f"é sk-{body}": True,  # after a non-ASCII character
        f"ésk-{body}": True,
        "sk-" + "a" * 11: False,  # 14 long
        "sk-" + "a" * 12: True,  # 15
        "sk-" + "a" * 11 + " " + "a" * 20: False,  # the long run is another
        "a.sk-" + "b" * 10 + " x": False,  # a run of exactly 15, its start too far in: another run follows
        "sk-abc…": True,  # reaching an ellipsis: the scan
        "sk-ab...c": True,
        f"{'a' * 20} sk-abc": False,
    }
    for text, holds in cases.items():
        assert secret_shapes._may_hold_token(text) is holds, text
        assert plain(text) is holds, text


def test_a_token_in_record_text_is_still_masked() -> None:
    token = "ghp_" + "Ab3" * 12
    record = (
        '[{"role": "tool", "content": "{\\"file_name\\": \\"Annual_Report_2023.docx\\", \\"t\\": \\"%s\\"}"}]'
    )
    text = record % token
    assert token not in mask_issued(text) and token not in mask_shapes(text)


def test_text_without_a_long_run_is_not_scanned(monkeypatch) -> None:
    def scan(text: str) -> bool:
        raise AssertionError("scanned by str.find for every start")

    monkeypatch.setattr(secret_shapes, "_may_hold_token_scan", scan)
    words = '{"role": "tool", "content": "sk_ ghp_ task_sk-1 hf_id a.b=c%2B"}, ' * 500
    assert secret_shapes._may_hold_token(words) is False
    assert secret_shapes._may_hold_token(words + "x AKIA" + "B" * 16) is True
