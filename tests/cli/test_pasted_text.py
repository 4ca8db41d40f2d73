"""A value written in a language beyond ASCII keeps the language's own joiners and spaces: Persian's
zero-width non-joiner, an ideographic space between Chinese words, an emoji's zero-width joiner. The
pasted-characters refusal read them as characters pasted into ASCII and refused valid run names."""

from __future__ import annotations

import pytest

from launch.cli.pasted_characters import pasted_refusal

WRITTEN = [
    "tracking.run_name='می\u200cخواهم'",  # Persian: the non-joiner is part of the word's spelling
    "tracking.run_name='实验\u3000一'",  # an ideographic space between Chinese words
    "tracking.run_name='\U0001f469\u200d\U0001f52crun'",  # 👩‍🔬: one emoji joined by U+200D
]


@pytest.mark.parametrize("override", WRITTEN)
def test_a_languages_own_joiners_and_spaces_are_kept(override: str) -> None:
    assert pasted_refusal(["validate", "+experiment=quickstart", override]) is None


@pytest.mark.parametrize(
    "override",
    [
        "seed=3\u00a0",  # a no-break space after ASCII
        "tracking.run_name=ab\u200bc",  # a zero-width space inside ASCII
        "tracking.run_name\u200c='می'",  # in the key: never a language's
        "tracking.run_name='实验\r'",  # a control character, in any text
    ],
)
def test_pasted_characters_in_ascii_or_in_a_key_are_still_refused(override: str) -> None:
    refused = pasted_refusal(["validate", override])
    assert refused is not None and "the command line holds U+" in refused.message
