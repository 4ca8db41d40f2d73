"""The cut of a text whose every ", " is a cut (pieces._cut marks and splits at them) is the zero-width
definition's, and a text where some ", " is not a cut (whitespace after it, the text's end) or that
holds the marker takes the pattern's: generated listings of numbers and strings, with the
exceptions mixed in."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat import pieces

# The cut's definition: between a "," and a " " followed by a non-space, every character kept.
ZERO_WIDTH_CUT = re.compile(r"(?<=,)(?= \S)")
# A listing's characters, and what makes a ", " not a cut (whitespace after it, Unicode's and
# Python's "\x1c" too) or the marker itself.
LISTING_FRAGMENTS = [", ", ",", "1", ".5", '"a"', "[", "]", "é", ", ,", "\0", ", \x1c", ", \n", ", \u3000"]


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(LISTING_FRAGMENTS), max_size=60).map("".join))
def test_the_cut_of_a_listing_is_the_zero_width_definition(text: str) -> None:
    assert pieces._cut(text) == ZERO_WIDTH_CUT.split(text)


def test_a_long_context_listing_is_cut_at_every_comma() -> None:
    listing = "[" + ", ".join(f"{n}.{n % 7}" for n in range(2000)) + "]"
    text = '{"price": 1.5, "MA(5)": ' + listing + "}"
    cut = pieces._cut(text)
    assert cut == ZERO_WIDTH_CUT.split(text) and len(cut) == 2001 and "".join(cut) == text
