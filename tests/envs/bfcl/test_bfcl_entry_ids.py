"""`t3rl_core.envs.bfcl.shipped.entry_ids` finds the ids a pattern of the category scanning the whole
text finds (what the id-cut check read before), also in adversarial text: other categories that share
a prefix or a suffix, ids with more `_<number>` parts, spaces, quotes and keys run together; `_latest`
picks a category's newest data file by its version number, among other categories' and other names."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from t3rl_core.envs.bfcl.shipped import _latest, entry_ids

CATEGORY = "multi_turn_base"
PIECES = (
    '"id": "multi_turn_base_',
    '"id": "multi_turn_base_12"',
    '12"',
    '7"',
    '"multi_turn_base_long_',
    '"id":',
    '"id": ',
    '"id":\n',
    '"',
    "multi_turn_base",
    "multi_turn_base_long",
    "x_multi_turn_base",
    "multi_turn",
    "_",
    "12",
    "7",
    "_3",
    '"ground_truth": [["cd(folder=\'x\')"]]',
    "}\n{",
    "\\",
    ",",
    " ",
)
TEXT = st.lists(st.sampled_from(PIECES), max_size=24).map("".join)


def _scanned(text: str, category: str) -> list[int]:
    return [int(n) for n in re.findall(rf'"id":\s*"{re.escape(category)}_(\d+)"', text)]


# Five texts an example over 300 examples: more texts than the 1,000 of one an example, with a fifth of
# Hypothesis's per-example work (nearly all the CPU of a scan this cheap).
@given(
    st.lists(
        st.tuples(TEXT, st.sampled_from([CATEGORY, "multi_turn", "multi_turn_base_long"])),
        min_size=5,
        max_size=5,
    )
)
# a match's closing quote that opens the next key: the whole scan goes on past its match; no space and a
# newline after the key
@example([('"id": "multi_turn_base_12"id": "multi_turn_base_12"', CATEGORY)])
@example([('"id":"multi_turn_base_3" "id":\n"multi_turn_base_4"', CATEGORY)])
@settings(max_examples=300, deadline=None)
def test_the_ids_of_a_category_are_the_whole_scan_s(cases: list[tuple[str, str]]) -> None:
    for text, category in cases:
        assert entry_ids(text, category) == _scanned(text, category), (text, category)


def test_ids_of_other_categories_are_not_counted() -> None:
    text = (
        '{"id": "multi_turn_base_199", "x": 1}\n{"id": "multi_turn_base_long_400"}\n'
        '{"id":"x_multi_turn_base_500"}\n{"id": "multi_turn_base_7_8"}\n'
    )
    assert entry_ids(text, CATEGORY) == _scanned(text, CATEGORY) == [199]


def test_the_latest_file_is_the_newest_version_of_the_category(tmp_path: Path) -> None:
    names = [
        "BFCL_v3_multi_turn_base.json",
        "BFCL_v10_multi_turn_base.json",
        "BFCL_v4_multi_turn_base.json",
        "BFCL_v11_multi_turn_base_long.json",
        "xBFCL_v12_multi_turn_base.json",
        "BFCL_vx_multi_turn_base.json",
        "BFCL_v13_multi_turn_base.jsonl",
    ]
    for name in names:
        (tmp_path / name).write_text("")
    assert _latest(tmp_path, CATEGORY) == tmp_path / "BFCL_v10_multi_turn_base.json"
    assert _latest(tmp_path, "multi_turn_base_long") == tmp_path / "BFCL_v11_multi_turn_base_long.json"
    assert _latest(tmp_path, "multi_turn_miss_func") is None
    assert _latest(tmp_path / "absent", CATEGORY) is None
