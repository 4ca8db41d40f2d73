"""Every Markdown table t3rl writes keeps its columns whatever text its cells hold (t3rl_core.markdown_cells):
a category from a hub dataset's `task` column holding a `|`, a sweep point's error of several lines, an
override quoting a pipe. Before, the text was joined as it was: a pipe opened a column and a line break
ended the row, so report.md's and sweep.md's values shifted under the wrong headers."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.run.sweep import PointRecord, SweepSummary
from t3rl_core.eval.metrics import EpisodeScore, summarize
from t3rl_core.eval.report import render_markdown
from t3rl_core.markdown_cells import cell, one_line, table

# The characters that matter, and any others.
_TEXT = st.text(st.sampled_from("ab |\\`*\n\r\v\f\x1c\x85\u2028\u2029") | st.characters(), max_size=30)


def _cells(line: str) -> list[str]:
    """A table row as GitHub (cmark-gfm) and markdown-it split it: at each pipe not right after a
    backslash, the outer pipes included; each cell's text with its escaped pipes read back."""
    assert line.startswith("| ") and line.endswith(" |"), line
    parts, current, previous = [], "", ""
    for char in line[2:-2]:
        if char == "|" and previous != "\\":
            parts.append(current)
            current = ""
        else:
            current += char
        previous = char
    parts.append(current)
    return [re.sub(r"(\\*)\\\|", lambda m: m[1][: len(m[1]) // 2] + "|", p.strip(" ")) for p in parts]


@settings(max_examples=300, deadline=None)
@given(header=st.lists(_TEXT, min_size=1, max_size=4), data=st.data())
def test_any_text_stays_in_its_own_cell(header: list[str], data: st.DataObject) -> None:
    rows = data.draw(st.lists(st.lists(_TEXT, min_size=len(header), max_size=len(header)), max_size=3))
    lines = table(header, rows)
    assert len(lines) == 2 + len(rows)
    for line, texts in zip([lines[0], *lines[2:]], [header, *rows], strict=True):
        assert line.splitlines() == [line]  # one row is one line
        assert _cells(line) == [one_line(text).strip(" ") for text in texts]


def test_a_cell_is_one_line_with_its_pipes_escaped() -> None:
    assert cell("a|b\r\nc") == "a\\|b c"
    assert cell("x\\|y") == "x\\\\\\|y"  # a backslash before a pipe stays a backslash


def _report(category: str) -> str:
    scores = summarize(
        [EpisodeScore("t/1", category, True, 1.0), EpisodeScore("t/2", "plain", False, 0.0)], [1]
    )
    summary = {"split": "s", "engine": {"name": "reference"}, "pass_k": [1], "samples": 1, **scores}
    return render_markdown(summary)


def test_a_category_holding_a_pipe_and_a_line_break_keeps_the_report_tables() -> None:
    text = _report("math|hard\nlevel 2")
    headers = [line for line in text.splitlines() if line.startswith("| category |")]
    assert len(headers) >= 2  # the scores and the statuses
    for header in headers:
        rows = text.split(header, 1)[1].splitlines()[2:]
        for row in rows:
            if not row.startswith("| "):
                break
            assert len(_cells(row)) == len(_cells(header)), row
    assert "| math\\|hard level 2 |" in text


def test_a_sweep_points_error_of_several_lines_keeps_its_row(tmp_path: Path) -> None:
    sweep = SweepSummary(tmp_path / "sweep", "s", metric_name="overall.accuracy")
    error = "error stages.eval: refused\n    set in: x='a|b'\n    fix: y=1"
    sweep.points[0] = PointRecord(0, ["x='a|b'"], ["x='a|b'"], status="failed", error=error)
    sweep.points[1] = PointRecord(1, ["x=c"], ["x=c"], status="planned")
    lines = sweep.markdown().splitlines()
    header = next(line for line in lines if line.startswith("| # |"))
    rows = [line for line in lines if line.startswith("| ") and line != header]
    assert len(rows) == 2
    for row in rows:
        assert len(_cells(row)) == len(_cells(header)) == 8
    assert _cells(rows[0])[1] == "x='a|b'" and _cells(rows[0])[3].startswith("failed: error stages.eval")
