"""The direct composition keeps each config file's parse (launch.config.direct.config_files._PARSED):
what one composition changes in place never reaches the next, and a file rewritten is read as it is
now, whatever its status."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from launch.config.direct import config_files
from launch.config.direct.compose import compose_directly
from launch.config.plain import Plain


def _composed(overrides: list[str], dirs: list[str] | None = None) -> Plain:
    plain = compose_directly(overrides, dirs or [], {})
    assert plain is not None, f"left to Hydra: {overrides}"
    return plain


def _fresh(overrides: list[str], dirs: list[str] | None = None) -> Plain:
    config_files._PARSED.clear()
    return _composed(overrides, dirs)


@pytest.mark.parametrize(
    "first",
    [
        ["+experiment=quickstart", "seed=7", "eval.limit_per_category=3"],
        ["+experiment=quickstart", "env.data.categories=['multi_turn_base']", "tracking=wandb"],
        ["+experiment=stage1_bfcl", "reward=binary", "hardware=h100x2"],
    ],
)
def test_a_composition_leaves_the_files_as_read(first: list[str]) -> None:
    later = ["+experiment=quickstart"]
    expected = _fresh(later)
    _composed(first)  # from the same parses: its overrides and merges change boxes in place
    again = _composed(later)
    assert again.data == expected.data
    assert list(again.provenance.items()) == list(expected.provenance.items())


def test_a_rewritten_file_is_read_again(tmp_path: Path) -> None:
    tracking = tmp_path / "tracking"
    tracking.mkdir()
    option = tracking / "mine.yaml"
    option.write_text("kind: none\nproject: first\n")
    stat = option.stat()
    assert _composed(["tracking=mine"], [str(tmp_path)]).data["tracking"]["project"] == "first"
    option.write_text("kind: none\nproject: other\n")  # the same size, and the same times
    os.utime(option, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _composed(["tracking=mine"], [str(tmp_path)]).data["tracking"]["project"] == "other"


def test_the_memo_is_bounded(tmp_path: Path) -> None:
    config_files._PARSED.clear()
    for n in range(config_files._MOST_PARSED + 20):
        config_files._parse("file://x", f"a: {n}\n", str(tmp_path / "x.yaml"))
    assert len(config_files._PARSED) == config_files._MOST_PARSED
    assert ("file://x", str(tmp_path / "x.yaml"), "a: 0\n") not in config_files._PARSED
