"""The scrub of a long text (plan.sh, a stage's command.sh, the plan's printed commands) takes shortcuts
that change nothing: `mask_url` searches only the runs of non-whitespace that hold `://` (its pattern
tried at every place cost a 7 KB plan.sh 2.5 M instructions), and `secret_pieces._segments` takes a line
that neither begins nor ends with padding or a border as it is. Property tests against the definitions
(the pattern over the whole text; `_strip` at both ends of every line), with adversarial text: schemes,
`://`, `:`, `@`, `/`, Unicode whitespace and the borders a renderer draws."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.secret import _URL_USERINFO, MASK, mask_url
from t3rl_core.secret_pieces import _segments, _strip

URL_PIECES = ("https", "s3+x", "1a", "://", ":", "@", "/", "u", "pw", "-", ".")
URL_PIECES += (" ", "\t", "\n", "\u2003", "é")
URL_TEXT = st.lists(st.sampled_from(URL_PIECES), max_size=24).map("".join)
LINE_PIECES = ("a", "key: v", " ", "\t", "\r", "│", "┃", "║", "|", "\n", "x=1", "")
LINES_TEXT = st.lists(st.sampled_from(LINE_PIECES), max_size=20).map("".join)


# Each example checks ten texts: Hypothesis's own work per example (~1 ms) was nearly all of these two
# tests' CPU, their checks ~10 us a text. 1,500 texts each as before, at a third of the CPU; the mutations
# of mask_url's runs and of _segments' edges the one-text-per-example tests caught, these catch.
BATCH = 10


@given(st.lists(URL_TEXT, min_size=BATCH, max_size=BATCH))
@settings(max_examples=150, deadline=None)
def test_url_passwords_masked_as_the_pattern_over_the_whole_text_masks_them(texts: list[str]) -> None:
    for text in texts:
        assert mask_url(text) == _URL_USERINFO.sub(rf"\1:{MASK}@", text), text


def test_url_passwords_in_a_long_text() -> None:
    text = "x " * 2000 + "--url=https://user:pw@host/a b http://u:p@h c://d ends"
    assert mask_url(text) == "x " * 2000 + "--url=https://user:***@host/a b http://u:***@h c://d ends"


def _segments_by_definition(text: str) -> list[tuple[int, int]]:
    segments, start = [], 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        a, b = start, start + len(line)
        if i:
            a = b - len(_strip(line, str.lstrip))
        if i < len(lines) - 1:
            b = a + len(_strip(text[a:b], str.rstrip))
        segments.append((a, b))
        start += len(line) + 1
    return segments


@given(st.lists(LINES_TEXT, min_size=BATCH, max_size=BATCH))
@settings(max_examples=150, deadline=None)
def test_line_segments_as_stripping_every_line(texts: list[str]) -> None:
    for text in texts:
        assert _segments(text) == _segments_by_definition(text), text
