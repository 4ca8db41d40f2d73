"""A run record hand-edited (or damaged) into JSON nested past Python's recursion: a resume, and every
reader of run records (`t3rl runs`, sweeps), read it with json.loads and raised RecursionError in
Python's words. It is now the corrupt record it is, named with the limit and what to do, as any other
damaged record (launch.run.record_files.read_json reads under t3rl_core.outside_json's limit)."""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.run.pipeline import PipelineError
from launch.run.record_files import RunDirError, read_json
from t3rl_core.outside_json import MAX_DEPTH
from tests.launch.pipeline_helpers import count, run, three_stage_plan


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 100_000])
def test_a_resume_over_a_state_record_nested_past_the_limit_is_refused_as_corrupt(
    tmp_path: Path, levels: int
) -> None:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    plan = three_stage_plan(run_dir, marks)
    run(plan, run_dir)
    (run_dir / "state.json").write_text('{"stages": ' + "[" * levels + "]" * levels + "}")
    with pytest.raises((RunDirError, PipelineError)) as caught:
        run(plan, run_dir)
    text = str(caught.value)
    assert f"{run_dir / 'state.json'} is corrupt" in text and f"nested at most {MAX_DEPTH} levels" in text
    assert [count(marks, name, "started") for name in "abc"] == [1, 1, 1]  # nothing run over it


def test_every_record_reader_refuses_a_nested_record(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("[" * 100_000)
    with pytest.raises(RunDirError, match="is corrupt"):
        read_json(path, dict)


NESTED = "[" * 100_000 + "]" * 100_000


def test_an_eval_records_nested_summary_lists_as_not_valid_json(tmp_path: Path) -> None:
    """`t3rl runs` over an eval record whose summary.json was damaged so."""
    from launch.cli.runs import _eval_stage

    (tmp_path / "summary.json").write_text(NESTED)
    view = _eval_stage(tmp_path)
    assert "summary.json is not valid JSON" in view.record["message"]


def test_an_earlier_runs_nested_record_is_named_with_the_fix(tmp_path: Path) -> None:
    """--from / init-from reads the earlier run's records."""
    from launch.previous_run import PreviousRunError, _read

    path = tmp_path / "manifest.json"
    path.write_text(NESTED)
    with pytest.raises(PreviousRunError, match=f"cannot read {path}: .*nested at most {MAX_DEPTH} levels"):
        _read(path)


def test_runs_compare_names_a_nested_summary_as_unreadable(tmp_path: Path) -> None:
    from launch.cli.results_compare import summaries_of

    (tmp_path / "summary.json").write_text(NESTED)
    found, unreadable = summaries_of(tmp_path)
    assert found == {} and unreadable == {"eval": f"{tmp_path / 'summary.json'} is not valid JSON"}
