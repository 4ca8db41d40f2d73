"""Wave ten's leftovers (docs/explanation/preflight.md "Hunt wave ten", docs/reference/cli-behaviour.md
"First hour, hunted (wave ten)"), each closed by a declaration:

- one value typed in brackets for a field that holds one (`seed=(3)`, `(3,)`, `{3}`, `[3]`): the item
  inside, when the field's declared type takes it (launch/config/schema_errors._one_item_inside; Hydra's
  grammar refuses `(3)` unquoted, and launch/checks/fix_closure.quoted_tried now tries the quoted form,
  `'(3)'`, which the field refuses in turn; was: the quoted form offered, or the key's old value);
- words past a command's last argument that takes one value (`t3rl ls experiment stage1_bfcl quickstart`):
  one command line per value, exit 2 (launch/cli/help_format._one_line_per_value; was: Click's "Got
  unexpected extra argument(s)" alone);
- a split given as its prepared file's path (`train_split=data/bfcl_train.jsonl`): the split its stem names,
  first when that validates (t3rl_core.fields.SplitName, the kind of every field naming a split; was: the
  path made a safe directory name, `data_bfcl_train.jsonl`, which names no split).
"""

from __future__ import annotations

import shlex

import pytest
from pydantic import ValidationError

from launch.config.errors import Problem
from t3rl_core.envs.retool.config import ReToolDataConfig
from tests.support.cli_app import invoke
from tests.support.refusals import errors, fixed

Q = "+experiment=quickstart"


def _only(line: list[str]) -> Problem:
    (problem,) = errors(line)
    return problem


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("seed=(3)", "seed=3"),
        ("seed=(3,)", "seed=3"),
        ("seed={3}", "seed=3"),
        ("seed=[3]", "seed=3"),
        ("seed=( 7 )", "seed=7"),
        ("hardware.gpus_per_node=(4)", "hardware.gpus_per_node=4"),
        # the key's old value is also what was typed: still offered as the reading of it
        ("hardware.gpus_per_node=(8)", "hardware.gpus_per_node=8"),
        ("hardware.gpus_per_node=[2]", "hardware.gpus_per_node=2"),
    ],
)
def test_one_value_in_brackets_is_the_item_inside(typed: str, meant: str) -> None:
    line = [Q, typed]
    problem = _only(line)
    assert problem.key == typed.partition("=")[0]
    applied = fixed(line, problem)
    assert applied == [Q, meant], problem.fix
    assert errors(applied) == []


@pytest.mark.parametrize("typed", ["seed=(3,4)", "seed=[3,4]", "seed=(abc)", "seed=()"])
def test_no_single_value_is_made_of_what_is_not_one(typed: str) -> None:
    """Two items (a sweep, maybe) or an item the field refuses: no value made of part of it."""
    problem = _only([Q, typed])
    key = typed.partition("=")[0]
    for inner in ("3", "4", "abc"):
        assert f"{key}={inner} " not in f"{problem.fix} ", problem.fix


def test_a_list_field_still_gets_its_list() -> None:
    """The item inside is read only where the field holds one value: a list keeps its brackets."""
    line = ["+experiment=stage1_bfcl", "env.data.categories=(multi_turn_base)"]
    applied = fixed(line, _only(line))
    assert applied[-1] == "env.data.categories=[multi_turn_base]"
    assert errors(applied) == []


# ------------------------------------------------------------- words past a command's last argument


def _lines_offered(output: str) -> list[str]:
    said = " ".join(output.replace("│", " ").split())
    assert "one command line each: " in said, output
    lines = said.partition("one command line each: ")[2].split(", then ")
    return [line.strip().rstrip("╰─╯").strip() for line in lines]


def test_two_options_for_ls_get_a_line_each() -> None:
    result = invoke(["ls", "experiment", "stage1_bfcl", "quickstart"])
    assert result.exit_code == 2, result.output
    lines = _lines_offered(result.output)
    assert lines == ["t3rl ls experiment stage1_bfcl", "t3rl ls experiment quickstart"]
    for line in lines:
        ran = invoke(shlex.split(line)[1:])
        assert ran.exit_code == 0, ran.output


def test_options_typed_are_kept_in_every_line() -> None:
    result = invoke(["ls", "experiment", "stage1_bfcl", "quickstart", "retool", "--config-dir", "conf"])
    assert result.exit_code == 2, result.output
    assert "3 values given" in " ".join(result.output.split())
    lines = _lines_offered(result.output)
    assert [shlex.split(line)[3] for line in lines] == ["stage1_bfcl", "quickstart", "retool"]
    assert all(line.endswith("--config-dir conf") for line in lines), lines


def test_a_path_argument_of_another_command_is_split_too() -> None:
    result = invoke(["runs", "show", "a", "b"])
    assert result.exit_code == 2, result.output
    assert _lines_offered(result.output) == ["t3rl runs show a", "t3rl runs show b"]


def test_the_same_value_twice_is_one_line() -> None:
    result = invoke(["ls", "experiment", "quickstart", "quickstart"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.replace("│", " ").split())
    assert "given twice; the command line: t3rl ls experiment quickstart" in said, result.output


# ----------------------------------------------------------------- a split given as its file's path


@pytest.mark.parametrize(
    ("key", "typed", "split"),
    [
        ("train_split", "data/bfcl_train.jsonl", "bfcl_train"),
        ("eval_split", "/abs/prepared/bfcl_val.jsonl", "bfcl_val"),
        ("train_split", "bfcl_train.jsonl", "bfcl_train"),
    ],
)
def test_a_split_given_as_its_prepared_file_names_the_split(key: str, typed: str, split: str) -> None:
    line = ["+experiment=stage1_bfcl", f"stages.train.curriculum.{key}={typed}"]
    problem = _only(line)
    applied = fixed(line, problem)
    assert applied[-1] == f"stages.train.curriculum.{key}={split}", problem.fix
    assert errors(applied) == []


def test_a_files_stem_that_names_no_split_is_not_the_first_fix() -> None:
    line = ["+experiment=stage1_bfcl", "stages.train.curriculum.train_split=data/nope.jsonl"]
    problem = _only(line)
    assert errors(fixed(line, problem)) == [], problem.fix


def test_every_field_naming_a_split_reads_a_files_path() -> None:
    """The kind is declared once (t3rl_core.fields.SplitName): an env's own split field reads it too."""
    with pytest.raises(ValidationError, match="use retool_test"):
        ReToolDataConfig.model_validate({"test_split": "data/retool_test.jsonl"})
