"""A group's option chosen by the key that names its section (`model.name=qwen3_8b`): the model was renamed
while its hf_id and architecture stayed Qwen3-4B's (valid, and planned so); `executor.kind=ray` was
refused for the local executor's keys with no word of `executor=ray`. Now refused, with the group choice
as the fix, whenever the option's section differs (launch/checks/identity_keys.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from launch.config.compose import group_options
from launch.config.resolved import composed_plain
from tests.support.cli_app import fix_of, invoke, refused, validates

STAGE1 = "+experiment=stage1_bfcl"
NAMING_KEY = {"model": "name", "hardware": "name", "executor": "kind", "env": "name", "reward": "name"}


@pytest.mark.parametrize(
    ("typed", "fix_validates"),
    [
        ("model.name=qwen3_8b", True),
        ("hardware.name=h100x8", True),
        ("executor.kind=ray", True),
        # tau2 brings its own splits: stage 1's eval split is BFCL's, the next answer names it
        ("env.name=tau2", False),
    ],
)
def test_an_option_typed_as_its_sections_name_is_answered_with_the_group_choice(
    typed: str, fix_validates: bool
) -> None:
    key, _, option = typed.partition("=")
    group = key.partition(".")[0]
    output = refused([STAGE1, typed])
    assert f"`{typed}` renames the {group} section only" in output, output
    assert f"{group}={option} instead of `{typed}`" in fix_of(output), output
    if fix_validates:
        validates([STAGE1, f"{group}={option}"])


def test_a_label_that_is_no_option_and_an_option_with_the_same_section_stand() -> None:
    validates([STAGE1, "model.name=my_label"])  # a name of one's own: nothing else was meant
    validates([STAGE1, "reward.name=binary"])  # the binary option's section is this one, renamed


def test_the_renamed_model_is_not_planned(here: Path) -> None:
    """What the old answer let through: a plan of the 4B checkpoint under the 8B's name."""
    result = invoke(["plan", STAGE1, "model.name=qwen3_8b", "--out", "p"])
    assert result.exit_code == 2 and not (here / "p").exists(), result.output


@pytest.mark.parametrize("group", sorted(NAMING_KEY))
def test_every_option_typed_as_the_naming_key_is_refused_or_the_same_section(group: str) -> None:
    """A property over each group's options: `GROUP.<naming key>=OPTION` validates only when OPTION's
    section is the one it renamed; otherwise it is refused and its fix validates."""
    current = composed_plain([STAGE1]).data[group]
    options = [o for o in group_options(group) if o != current.get(NAMING_KEY[group])]
    for option in random.Random(group).sample(options, min(3, len(options))):
        typed = f"{group}.{NAMING_KEY[group]}={option}"
        result = invoke(["validate", STAGE1, typed])
        meant = composed_plain([STAGE1, f"{group}={option}"]).data[group]
        renamed = composed_plain([STAGE1, typed]).data[group]
        same = {k: v for k, v in meant.items() if k not in ("name", "kind")} == {
            k: v for k, v in renamed.items() if k not in ("name", "kind")
        }
        if same:
            assert result.exit_code in (0, 2) and "renames" not in result.output, result.output
        else:
            assert result.exit_code == 2 and f"{group}={option} instead of" in result.output, result.output


@pytest.mark.parametrize(("typed", "kept"), [("stages.train.kind=eval", "curriculum, hardware, init_from")])
def test_a_stage_made_another_kind_by_its_key_is_one_problem_naming_what_it_keeps(
    typed: str, kept: str
) -> None:
    """Was one "unknown key" per key of the old kind, blamed on the experiment file, with the new kind's
    keys listed as the fix."""
    output = refused([STAGE1, typed])
    assert output.count("\nerror ") == 0 and output.startswith("error stages.train.kind: "), output
    assert f"it keeps keys an eval stage does not have: {kept}" in output, output
    assert fix_of(output).startswith(f"set stages.train.kind=train (its value without `{typed}`)"), output
