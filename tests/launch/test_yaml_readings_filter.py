"""launch/config/yaml_readings._MAYBE, the pre-filter of a config file's text: it starts with one class of
characters (re then skips to them rather than trying a match at every character of every file a cold
command composes), and finds a candidate wherever the alternation it replaced did."""

from __future__ import annotations

import re
from pathlib import Path
from re import _parser  # type: ignore[attr-defined]

from hypothesis import given
from hypothesis import strategies as st

from launch.config import yaml_readings

REPO = Path(__file__).resolve().parents[2]
# The filter as it was: the same scalars after the same separators, the separator as an alternation.
BEFORE = re.compile(
    r"([:-][ \t]+|[\[,][ \t]*)"
    r"[-+]?([0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?|0[0-7_]+|(?i:yes|no|on|off))[ \t]*([#,}\]]|$)",
    re.M,
)


def test_the_filter_starts_with_a_class_of_characters() -> None:
    first_op, _ = _parser.parse(yaml_readings._MAYBE.pattern, yaml_readings._MAYBE.flags)[0]
    assert first_op is _parser.IN


def test_every_shipped_config_file_is_filtered_as_before() -> None:
    files = sorted((REPO / "conf").rglob("*.yaml"))
    assert len(files) > 40
    for file in files:
        text = file.read_text(encoding="utf-8")
        assert bool(yaml_readings._MAYBE.search(text)) == bool(BEFORE.search(text)), file


PIECES = st.sampled_from(
    [": ", ":", "- ", "-", "[", ",", " ", "\t", "\n", "#", "]", "}", "0", "07", "010", "1:30", "12:00:00",
     "yes", "No", "ON", "off", "+", "_", ".5", "a", "key", "x:"]
)  # fmt: skip


@given(st.lists(PIECES, max_size=12).map("".join))
def test_a_candidate_is_found_where_the_alternation_found_one(text: str) -> None:
    found, before = yaml_readings._MAYBE.search(text), BEFORE.search(text)
    assert (found and found.span()) == (before and before.span())
