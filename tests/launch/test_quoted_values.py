"""A value a fix proposes reads back, through Hydra's own override parser, as the string it says."""

from __future__ import annotations

import string

from hydra.core.override_parser.overrides_parser import OverridesParser
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config.fixes import quoted

PARSER = OverridesParser.create()
# Paths, URLs, numbers-as-text and Hydra's own syntax characters.
ALPHABET = string.ascii_letters + string.digits + "~/._-+:@%$*?|\\'\",[]{}()= #!&^<>`;"


def _read_back(value: str) -> object:
    return PARSER.parse_override(f"k={quoted(value)}").value()


@given(st.text(alphabet=ALPHABET, min_size=1, max_size=24))
@settings(max_examples=300, deadline=None)
def test_any_string_reads_back_as_itself(value: str) -> None:
    assert _read_back(value) == value


def test_home_paths_numbers_and_keywords_are_quoted() -> None:
    for value in ("~/.cache/t3rl", "/a/b~c", "1e-6", "true", "null", "8", "a,b", "[x]"):
        assert _read_back(value) == value
    assert quoted("runs") == "runs" and quoted("/tmp/x.y") == "/tmp/x.y"  # plain values stay unquoted
