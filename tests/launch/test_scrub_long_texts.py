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


@given(URL_TEXT)
@settings(max_examples=1500, deadline=None)
def test_url_passwords_masked_as_the_pattern_over_the_whole_text_masks_them(text: str) -> None:
    assert mask_url(text) == _URL_USERINFO.sub(rf"\1:{MASK}@", text)


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


@given(LINES_TEXT)
@settings(max_examples=1500, deadline=None)
def test_line_segments_as_stripping_every_line(text: str) -> None:
    assert _segments(text) == _segments_by_definition(text)
