"""launch.output.markup.removed: the control characters rich removes from printed text, taken out only
where text holds one (`str.translate` reads every character of non-ASCII text through its mapping);
always the same as translating the text (property test, with the removed characters, non-ASCII text
and tags)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.output.markup import REMOVED, plain, removed

TEXT = st.text(st.sampled_from("ab [/]\\→é\a\b\v\f\r\n\t"), max_size=30)


@given(TEXT)
@settings(max_examples=800, deadline=None)
def test_the_same_as_translating(text: str) -> None:
    assert removed(text) == text.translate(REMOVED)


def test_plain_text_loses_the_removed_characters_only() -> None:
    assert plain("[bold]a→\rb[/]\a") == "a→b" and plain("a→b\n") == "a→b\n"
