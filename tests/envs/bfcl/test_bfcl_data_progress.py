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


def test_lines_every_5_percent_with_an_eta_and_at_the_end() -> None:
    out = io.StringIO()
    sink = ProgressLines(out, every_s=3600)
    for done in range(41):
        sink(done, 40, "rows built")
    lines = out.getvalue().splitlines()
    assert lines[0] == "data progress: 0/40 rows built"
    assert len(lines) == 1 + 20 and lines[1].startswith("data progress: 2/40 rows built, ETA ")
    assert lines[-1] == "data progress: 40/40 rows built"
    # What the launcher reads from them.
    state = StageProgress()
    assert [state.feed(line + "\n") for line in lines[-2:]] == ["data", "data"]
    assert (state.done, state.total, state.what) == (40, 40, "rows built")


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
