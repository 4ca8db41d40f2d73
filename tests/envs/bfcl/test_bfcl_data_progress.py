"""A data preparation reports its progress per row: each phase's counts reach the caller's sink, and
`python -m t3rl_core.data` turns them into `data progress: …` lines that the launcher's live display
parses (tests/launch/test_stage_progress.py renders them)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from launch.run.stage_progress import StageProgress
from t3rl_core.data import prepare_env_data, read_manifest
from t3rl_core.data.__main__ import main
from t3rl_core.data.progress import ProgressLines, reporting
from t3rl_core.envs.bfcl.config import BFCLEnvConfig

BASE_ONLY = BFCLEnvConfig.model_validate({"data": {"categories": ["multi_turn_base"]}})


def test_bfcl_counts_every_row_it_builds_and_writes(tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    with reporting(lambda done, total, what: seen.append((done, total, what))):
        prepare_env_data(BASE_ONLY, tmp_path)
    phases = list(dict.fromkeys((total, what) for _, total, what in seen))
    written = sum(info["rows"] for info in read_manifest(tmp_path)["splits"].values())
    assert phases == [(200, "rows built"), (written, "rows written")]
    for total, what in phases:
        counts = [done for done, t, w in seen if (t, w) == (total, what)]
        assert counts == list(range(total + 1))  # from 0, one row at a time, to the end


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _lines_of(seconds_per_phase: float, rows: int = 800) -> list[str]:
    """What a preparation of two phases (rows built, rows written) prints at an even pace."""
    out, clock = io.StringIO(), _Clock()
    sink = ProgressLines(out, clock=clock)
    for what in ("rows built", "rows written"):
        for done in range(rows + 1):
            sink(done, rows, what)
            clock.now += seconds_per_phase / rows
    return out.getvalue().splitlines()


def test_a_short_preparation_prints_each_phases_end_only() -> None:
    """A 3-second data stage printed 42 lines (every 5 % of each phase); now its two phase ends."""
    assert _lines_of(1.5) == ["data progress: 800/800 rows built", "data progress: 800/800 rows written"]


def test_a_long_preparation_prints_a_line_every_few_seconds_with_an_eta() -> None:
    lines = _lines_of(30.0)  # a minute in all: a line every 3 s and the two ends
    assert 20 <= len(lines) <= 22, lines
    assert lines[0].startswith("data progress: 80/800 rows built, ETA 27s")
    assert lines[-1] == "data progress: 800/800 rows written"
    # What the launcher reads from them.
    state = StageProgress()
    assert [state.feed(line + "\n") for line in lines[-2:]] == ["data", "data"]
    assert (state.done, state.total, state.what) == (800, 800, "rows written")


def test_the_data_command_prints_progress_lines_when_not_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text(
        yaml.safe_dump(
            {
                "t3rl": {
                    "env": {"name": "bfcl_multi_turn", "data": {"categories": ["multi_turn_base"]}},
                    "reward": {"name": "progress"},
                    "chat": {"tokenizer": "unused-for-data"},
                    "parsers": {"tool_call_parser": "qwen25"},
                }
            }
        )
    )
    assert main(["--runtime-config", str(runtime), "--out", str(tmp_path / "data")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("data progress:")]
    assert "data progress: 200/200 rows built" in lines
    state = StageProgress()
    assert all(state.feed(line + "\n") == "data" for line in lines)
    assert state.done == state.total and state.what == "rows written"
