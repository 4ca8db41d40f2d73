"""Overrides that do not do what they read as, and their answers (docs/reference/cli-behaviour.md):

- set twice (`seed=1 … seed=2`, `model=a … model=b`): the first was dropped without a word;
- `stages={}`: merged into the stages there, so nothing changed, silently;
- a section given null or a number (`env.data=null`): "see the field's comment";
- a group given null (`eval=null`): key `<config>`, set in "(schema default)", no fix;
- a group the config needs deleted (`~hardware`, `~paths`, `~model`): "required key is missing" from
  "(schema default)" with `t3rl show --explain ` (nothing after it), or another file's interpolation
  blamed.
Each fix is applied as printed and must validate.
"""

from __future__ import annotations

import pytest

from tests.support.cli_app import fix_of, invoke, refused, validates

STAGE1 = "+experiment=stage1_bfcl"


def _warnings(argv: list[str]) -> list[str]:
    result = invoke(["validate", *argv])
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("warning ")]


def _fix_after(warning_key: str, argv: list[str]) -> str:
    result = invoke(["validate", *argv])
    lines = result.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"warning {warning_key}:"))
    return next(
        line.strip().removeprefix("fix: ") for line in lines[start:] if line.strip().startswith("fix:")
    )


@pytest.mark.parametrize(
    ("first", "later"), [("seed=1", "seed=2"), ("model=qwen3_8b", "model=qwen3_4b_instruct_2507")]
)
def test_a_key_set_twice_is_warned_with_the_one_that_is_dropped(first: str, later: str) -> None:
    argv = [STAGE1, first, later]
    key = first.partition("=")[0]
    assert any(f"`{first}` is replaced by `{later}`" in w for w in _warnings(argv)), argv
    assert _fix_after(key, argv).startswith(f"drop `{first}`")
    assert not any(w.split(":")[0] == f"warning {key}" for w in _warnings([STAGE1, later]))  # fix applied


def test_an_empty_mapping_over_named_entries_is_warned_with_the_deletions() -> None:
    argv = [STAGE1, "stages={}"]
    assert any("`stages={}` changes nothing" in w for w in _warnings(argv))
    fix = _fix_after("stages", argv)
    assert "~stages.data ~stages.to_torch_dist ~stages.train ~stages.to_hf ~stages.eval" in fix, fix
    # deleting every stage is the config emptied, which `validate` accepts and warns about
    assert invoke(["validate", STAGE1, *fix.split(": ", 1)[1].split(";")[0].split()]).exit_code == 0


def test_an_empty_mapping_over_a_schema_section_is_warned_without_deletions() -> None:
    fix = _fix_after("stages.train.curriculum", [STAGE1, "stages.train.curriculum={}"])
    assert fix.startswith("drop `stages.train.curriculum={}`") and "~" not in fix, fix


def test_a_mapping_with_entries_is_not_warned() -> None:
    assert not any("changes nothing" in w for w in _warnings([STAGE1, "+hardware.env_vars={A: b}"]))


@pytest.mark.parametrize("typed", ["env.data=null", "env.data=3", "stages.train=null"])
def test_a_section_given_a_value_is_answered_with_dropping_it(typed: str) -> None:
    fix = fix_of(refused([STAGE1, typed]))
    assert fix.startswith(f"drop `{typed}`") and "see the field's comment" not in fix, fix
    validates([STAGE1])


def test_the_undone_value_and_the_bound_are_said_once_when_they_are_one() -> None:
    assert fix_of(refused([STAGE1, "seed=-1"])) == "set seed=42 (its value without `seed=-1`; seed >= 0)"


@pytest.mark.parametrize("typed", ["eval=null", "model=null"])
def test_a_group_given_null_names_its_group_and_override(typed: str) -> None:
    group = typed.partition("=")[0]
    output = refused([STAGE1, typed])
    assert output.startswith(f"error {group}: config group '{group}' takes one of its options, not null"), (
        output
    )
    assert f"set in: override `{typed}`" in output and "(schema default)" not in output, output
    assert fix_of(output).startswith("drop that override")


@pytest.mark.parametrize("typed", ["~hardware", "~reward", "~env", "~paths", "~model"])
def test_a_group_the_config_needs_deleted_is_blamed_on_the_deletion(typed: str) -> None:
    group = typed[1:]
    output = refused([STAGE1, typed])
    assert output.startswith(f"error {group}: `{typed}` deleted the {group} group's section"), output
    assert f"set in: override `{typed}`" in output, output
    assert fix_of(output).startswith(f"drop `{typed}`; another option instead: {group}=<one of ")


def test_a_group_with_a_default_may_be_deleted() -> None:
    validates([STAGE1, "~tracking"])


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("reward=progress,", "reward=progress"), ("reward=,binary", "reward=binary"), ("seed==7", "seed=7")],
)
def test_a_stray_separator_is_dropped_not_quoted_into_the_value(typed: str, meant: str) -> None:
    """The fix quoted the value (`reward='progress,'`, `seed='=7'`): an option, a seed that are none."""
    fix = fix_of(refused([STAGE1, typed]))
    assert fix.startswith(f"{meant} ("), fix
    validates([STAGE1, meant])


def test_a_section_given_an_option_of_the_group_its_experiment_mounts_there_gets_the_choice() -> None:
    """stage1_bfcl's defaults list mounts `/curriculum@stages.train.curriculum: bfcl_stage1`; the word typed
    over the section is that group's option, chosen with the same package."""
    fix = fix_of(refused([STAGE1, "stages.train.curriculum=bfcl_stage2"]))
    choice = "curriculum@stages.train.curriculum=bfcl_stage2"
    assert fix.startswith(f"set {choice} instead of"), fix
    validates([STAGE1, choice])


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("stages.train.curriculum.rollout_top_p=95", "stages.train.curriculum.rollout_top_p=0.95"),
        ("eval.max_engine_failure_rate=5", "eval.max_engine_failure_rate=0.05"),
    ],
)
def test_a_percentage_typed_for_a_fraction_is_answered_with_the_fraction_first(
    typed: str, meant: str
) -> None:
    """The fix was the value before the override (top_p 1.0, failure rate 0.0), a bound of 1 beside it."""
    fix = fix_of(refused([STAGE1, typed]))
    assert fix.startswith(f"set {meant} (a fraction: "), fix
    validates([STAGE1, meant])
