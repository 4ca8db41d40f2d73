"""A newcomer's first hour, round three: what the earlier passes left, found by following README.md and
the tutorials literally in a scratch clone.

- `t3rl runs | grep <run>` and `t3rl runs show DIR | grep <stage>` in a pipe or a log: rich's boxed table
  folded the run's name over two lines at 80 columns, so grep found nothing.
- `t3rl runs` when every eval listed stopped before its first episode (a first `t3rl eval` interrupted):
  exit 2, 'there is no number 'overall.accuracy' …; did you mean 'overall.accuracy'?'.
- `t3rl eval` before any checkpoint exists: `--serve-checkpoint` of a dir that does not exist, of a run
  or stage dir (its HF checkpoint below), of a torch_dist checkpoint; `--stage` of an eval stage whose
  checkpoint no run has written yet, or one has.
- `+experiment=quikstart` answered `did you mean experiment=quickstart?`, the '+' dropped.
- overrides pasted as one quoted argument (`'+experiment=quickstart model=tiny_qwen3'`) or with
  typographic quotes (`seed=“7”`): the fix quoted the whole text as one value, keeping the mistake.
- the quickstart's data stage titled its table with the staging dir it renames when done
  (`bfcl_multi_turn → …/bfcl_multi_turn-<key>.tmp.3IIc3T`), a path gone once the stage ends.
- the hf engine (the quickstart's eval_tiny) in a Python without transformers: 'cannot load a model from
  DIR: No module named …', as if the model were at fault.
Each failed before.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from launch.run.record_files import EVAL_RECORD
from t3rl_core.data import default_env_config
from t3rl_core.data.__main__ import prepare_and_show
from t3rl_core.data.publish import final_dir
from t3rl_core.engines.base import EngineUnavailable
from t3rl_core.engines.config import HFEngineConfig
from t3rl_core.engines.hf import HFEngine
from tests.support.cli_app import fix_of, invoke, refused, validates

RUN = "a_rather_long_experiment_name/20260101-000000"


def _run_dir(root: Path) -> Path:
    """A run dir whose eval stage wrote a summary (what `t3rl runs` reads of it)."""
    path = root / RUN
    (path / "stages" / "evaluate_the_reference").mkdir(parents=True)
    config = {"name": "a_rather_long_experiment_name", "stages": {"evaluate_the_reference": {"kind": "eval"}}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    summary = {"overall": {"accuracy": 0.5, "tasks": 4}}
    (path / "stages" / "evaluate_the_reference" / "summary.json").write_text(json.dumps(summary))
    return path


# ------------------------------------------- tables in a pipe keep each row on one line


def test_runs_in_a_pipe_keeps_each_run_on_one_line_grep_finds(here: Path) -> None:
    """Before: `quickstart/20 │ … │` then `261127-193819 │`: `t3rl runs | grep 20261127-193819` found none."""
    _run_dir(here / "runs")
    result = invoke(["runs", "--runs-dir", "runs"], COLUMNS="80")
    assert result.exit_code == 0, result.output
    found = [line for line in result.output.splitlines() if RUN in line]
    assert len(found) == 1, result.output
    assert "evaluate_the_reference 0.500 (n=4)" in found[0], result.output
    assert "┃" not in result.output and "│" not in result.output, result.output


def test_runs_show_in_a_pipe_keeps_each_stage_on_one_line(here: Path) -> None:
    path = _run_dir(here / "runs")
    result = invoke(["runs", "show", str(path)], COLUMNS="80")
    assert result.exit_code == 0, result.output
    rows = [line.split() for line in result.output.splitlines()]
    assert ["evaluate_the_reference", "·", "planned"] in [row[:3] for row in rows], result.output


def test_runs_lists_an_eval_stopped_before_any_episode_under_the_default_metric(here: Path) -> None:
    """An eval record whose summary measured nothing (accuracy null): an interrupted `t3rl eval`'s."""
    record = here / "runs" / "eval-hf-20260101-000000"
    record.mkdir(parents=True)
    (record / "manifest.json").write_text(json.dumps({"record": EVAL_RECORD}))
    (record / "config.yaml").write_text("name: eval\n")
    summary = {"complete": False, "reason": "stopped", "seed": 0, "overall": {"tasks": 0, "accuracy": None}}
    (record / "summary.json").write_text(json.dumps(summary))
    result = invoke(["runs"])
    assert result.exit_code == 0, result.output
    assert any(line.startswith("eval-hf-20260101-000000 ") for line in result.output.splitlines()), (
        result.output
    )
    misspelt = invoke(["runs", "--metric", "overall.acuracy"])
    assert misspelt.exit_code == 2 and "did you mean 'overall.accuracy'?" in misspelt.output, misspelt.output
    itself = invoke(["runs", "--metric", "overall.nothing"])
    assert itself.exit_code == 2 and "did you mean 'overall.nothing'" not in itself.output, itself.output


# ------------------------------------------- t3rl eval before a checkpoint exists


def _hf(path: Path) -> Path:
    """An HF dir as a convert stage leaves it (what --serve-checkpoint is checked for)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def _eval_refused(argv: list[str], option: str) -> str:
    result = invoke(["eval", "+experiment=stage1_bfcl", *argv])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert f"Invalid value for {option}:" in text, text
    return text


def test_serve_checkpoint_of_a_dir_that_does_not_exist_says_so_and_what_it_takes(here: Path) -> None:
    """Before: 'runs/nope holds no HF config.json', as for a dir that exists."""
    text = _eval_refused(["--serve-checkpoint", "runs/nope"], "--serve-checkpoint")
    assert "runs/nope does not exist" in text, text
    assert "runs/<name>/<timestamp>/stages/<convert stage>/hf" in text, text


@pytest.mark.parametrize(
    "given", ["runs/stage1_bfcl", "runs/stage1_bfcl/20260101-000000", "RUN/stages/to_hf"]
)
def test_serve_checkpoint_of_a_run_or_stage_dir_names_its_hf_checkpoint(here: Path, given: str) -> None:
    """Before: '<dir> holds no HF config.json' and nothing of the checkpoint below it."""
    hf = _hf(here / "runs/stage1_bfcl/20260101-000000/stages/to_hf/hf")
    given = given.replace("RUN", "runs/stage1_bfcl/20260101-000000")
    text = _eval_refused(["--serve-checkpoint", given], "--serve-checkpoint")
    assert f"--serve-checkpoint {hf.relative_to(here)}" in text, text


def test_serve_checkpoint_of_a_torch_dist_checkpoint_says_it_needs_converting(here: Path) -> None:
    (here / "ckpt").mkdir()
    (here / "ckpt" / "latest_checkpointed_iteration.txt").write_text("10")
    text = _eval_refused(["--serve-checkpoint", "ckpt"], "--serve-checkpoint")
    assert "torch_dist checkpoint" in text and "convert_torch_dist_to_hf" in text, text


def test_an_eval_stage_of_a_checkpoint_no_run_wrote_names_the_run_that_writes_it(here: Path) -> None:
    """Before: 'engine sglang has no server: give --url …', nothing of the checkpoint stage eval evaluates."""
    text = _eval_refused(["--stage", "eval"], "--stage")
    assert "stage eval evaluates the HF checkpoint stage to_hf writes" in text, text
    assert "`t3rl run +experiment=stage1_bfcl`" in text, text


def test_an_eval_stage_of_a_checkpoint_a_run_wrote_names_that_checkpoint(here: Path) -> None:
    _hf(here / "runs/stage1_bfcl/20260101-000000/stages/to_hf/hf")
    latest = _hf(here / "runs/stage1_bfcl/20260102-000000/stages/to_hf/hf")
    text = _eval_refused(["--stage", "eval"], "--stage")
    assert f"--serve-checkpoint {latest.relative_to(here)}" in text, text


# ------------------------------------------- a misspelt option keeps the override's form


@pytest.mark.parametrize(
    ("typed", "fixed"),
    [
        ("+experiment=quikstart", "+experiment=quickstart"),
        ("+experiment=QUICKSTART", "+experiment=quickstart"),
        ("experiment=quikstart", "experiment=quickstart"),
    ],
)
def test_a_misspelt_experiment_is_answered_in_the_form_it_was_typed(
    here: Path, typed: str, fixed: str
) -> None:
    """Before: `+experiment=quikstart` got 'did you mean experiment=quickstart?', the '+' the README
    always writes dropped."""
    fix = fix_of(refused([typed]))
    assert fix == f"did you mean {fixed}?", fix
    validates([fixed])


def test_a_misspelt_group_option_added_with_plus_gets_the_fix_without_it(here: Path) -> None:
    """`+model=…` adds a group the defaults already choose: its fix is `model=…`, which validates."""
    fix = fix_of(refused(["+experiment=quickstart", "+model=tiny-qwen3"]))
    assert fix == "did you mean model=tiny_qwen3?", fix
    validates(["+experiment=quickstart", "model=tiny_qwen3"])


# ------------------------------------------- overrides as a pasted command line brings them


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        (
            ["+experiment=quickstart model=tiny_qwen3 seed=3"],
            ["+experiment=quickstart", "model=tiny_qwen3", "seed=3"],
        ),
        (["+experiment=quickstart", "seed=3 ~tracking"], ["+experiment=quickstart", "seed=3", "~tracking"]),
        (["+experiment=quickstart", "seed=\u201c7\u201d"], ["+experiment=quickstart", "seed=7"]),
        (["+experiment=quickstart", "name=\u2018mine\u2019"], ["+experiment=quickstart", "name=mine"]),
    ],
)
def test_overrides_pasted_whole_or_with_typographic_quotes_get_the_arguments_meant(
    here: Path, typed: list[str], meant: list[str]
) -> None:
    """Before: `"+experiment='quickstart model=tiny_qwen3 seed=3'"` and `"seed='\u201c7\u201d'"`: values
    quoted whole, an experiment named 'quickstart model=…' and a seed that is a text."""
    fix = fix_of(refused(typed)).rpartition(" (")[0]
    assert [*typed[:-1], *shlex.split(fix)] == meant, fix
    validates(meant)


# ------------------------------------------- a path printed is a path that stays


def test_the_data_table_names_the_dir_the_stage_renames_its_staging_dir_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the title named `…-KEY.tmp.3IIc3T`, which `mv -T` renames to `…-KEY` right after."""
    staging = tmp_path / "bfcl_multi_turn-0123456789abcdef.tmp.3IIc3T"
    assert prepare_and_show(default_env_config("bfcl"), staging) == 0
    title = "".join(capsys.readouterr().err.split())  # rich folds a title to its table's width
    assert f"bfcl_multi_turn→{tmp_path / 'bfcl_multi_turn-0123456789abcdef'}┏" in title, title
    assert ".tmp." not in title, title


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("data-k.tmp.AbC123", "data-k"),
        ("data-k", "data-k"),
        ("data.tmp.long-one", "data.tmp.long-one"),  # no mktemp name: as given
        (".tmp.AbC123", ".tmp.AbC123"),
        ("my.tmp.data.tmp.x1y2z3", "my.tmp.data"),
    ],
)
def test_only_a_mktemp_staging_name_is_shown_as_its_final_dir(name: str, shown: str) -> None:
    assert final_dir(Path("/cache") / name) == Path("/cache") / shown


# ------------------------------------------- a package of the stack missing


def test_the_hf_engine_without_transformers_names_the_package_and_setup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 'hf engine: cannot load a model from DIR: import of transformers halted …'."""
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` raises as if missing
    engine = HFEngine(HFEngineConfig(model_path=str(tmp_path)))
    with pytest.raises(EngineUnavailable) as caught:
        asyncio.run(engine.check())
    said = str(caught.value)
    assert f"the Python package 'transformers' is not installed in {sys.executable}" in said, said
    assert "./scripts/setup.sh" in said and "cannot load a model" not in said, said
