"""A setting typed at the wrong place (`lr=1e-6`, `train.lr=…`, `model.tensor_parallel=2`) is answered
with the key where the composed config holds it, and that fix validates as printed; a misspelt name is
offered only when what was typed under it exists there too (`train.lr` was answered `+tracking.lr`,
which the schema refused in turn). launch/config/misplaced_keys.py; docs/reference/cli-behaviour.md.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch.config.misplaced_keys import places, typed_leaves
from tests.support.cli_app import fix_of, invoke, refused, validates

STAGE1 = "+experiment=stage1_bfcl"
# A string Hydra keeps a string unquoted (no number, boolean or null spelt by it).
_PLAIN = re.compile(r"^[A-Za-z_][\w./:-]*$(?<!true)(?<!false)(?<!null)")


@pytest.mark.parametrize(
    ("typed", "lives_at"),
    [
        ("lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("+lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("train.lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("optimizer.lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("train.optimizer.lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("stages.train.lr=2e-6", "stages.train.curriculum.optimizer.lr=2e-6"),
        ("model.tensor_parallel=4", "hardware.tensor_parallel=4"),
        ("tensor_parallel=4", "hardware.tensor_parallel=4"),
        ("rollout_batch_size=64", "stages.train.curriculum.rollout_batch_size=64"),
        ("n_samples=32", "stages.train.curriculum.n_samples_per_prompt=32"),
        ("kl_coef=0.01", "stages.train.curriculum.algorithm.kl_loss_coef=0.01"),
    ],
)
def test_a_setting_typed_elsewhere_is_answered_with_where_it_lives(typed: str, lives_at: str) -> None:
    output = refused([STAGE1, typed])
    fix = fix_of(output)
    assert fix.endswith(lives_at) and "tracking" not in fix, output
    validates([STAGE1, lives_at])


def test_a_misspelt_name_whose_rest_is_not_there_is_not_offered() -> None:
    """`train` is close to `tracking`, but `tracking.lr` is no key: offering `+tracking.lr=…` only moved
    the refusal one command on."""
    for typed in ("train.lr=1e-6", "train.optimizer.lr=1e-6"):
        fix = fix_of(refused([STAGE1, typed]))
        assert "tracking" not in fix and fix.endswith("stages.train.curriculum.optimizer.lr=1e-6"), fix


def test_a_plain_typo_keeps_its_did_you_mean() -> None:
    assert fix_of(refused([STAGE1, "seeed=3"])) == "did you mean 'seed'? e.g. seed=3"
    fix = fix_of(refused([STAGE1, "hardware.tensor_paralel=1"]))
    assert fix == "did you mean 'hardware.tensor_parallel'? e.g. hardware.tensor_parallel=1"


def test_a_name_merely_alike_is_not_a_fix() -> None:
    """`learning_rate` reads like `reasoning_parser` to difflib (0.6): another setting, so no guess."""
    fix = fix_of(refused([STAGE1, "learning_rate=1e-6"]))
    assert fix.startswith("known keys at the top level"), fix


def test_a_credential_typed_elsewhere_gets_the_reference_form_not_its_value() -> None:
    value = "sk-misplaced-0123456789abcdef"
    output = refused([STAGE1, f"api_key={value}"])
    assert value not in output and "env:NAME" in fix_of(output), output


def test_a_setting_an_experiment_file_puts_at_the_wrong_place(here: Path) -> None:
    """The same answer when the schema, not an override, refuses the key (a file's `train: {lr: …}`)."""
    path = here / "mine" / "experiment" / "mine.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("# @package _global_\ndefaults:\n  - stage1_bfcl\ntrain:\n  lr: 3.0e-06\n")
    result = invoke(["validate", "--config-dir", "mine", "+experiment=mine"])
    assert result.exit_code == 2, result.output
    # In the file: an override beside it (`stages.train.curriculum.optimizer.lr=3e-06`) left `train:`
    # there, refused again.
    assert fix_of(result.output) == (
        "set it where it lives: in mine/experiment/mine.yaml, delete `train:` at the top level and set "
        "stages.train.curriculum.optimizer.lr: 3e-06 instead"
    )


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, Mapping) and node:
        for name, item in node.items():
            yield from _leaves(item, f"{prefix}.{name}" if prefix else str(name))
    elif prefix and (isinstance(node, bool | int | float) or (isinstance(node, str) and _PLAIN.match(node))):
        yield prefix, node


def test_every_setting_typed_by_its_last_name_alone_is_placed_and_validates() -> None:
    """A property over the composed config: a leaf whose last name no other key ends with, typed by
    that name alone with its own value, is answered with its full key, and the fix validates."""
    shown = invoke(["show", STAGE1])
    assert shown.exit_code == 0, shown.output
    composed = yaml.safe_load(shown.stdout)  # warnings go to stderr
    top = set(composed)
    unique = [
        (key, value)
        for key, value in _leaves(composed)
        if "." in key
        and key.rpartition(".")[2] not in top
        and places(key.rpartition(".")[2], composed) == [key]
    ]
    assert len(unique) > 40, unique
    for key, value in random.Random(7).sample(unique, 12):
        typed = f"{key.rpartition('.')[2]}={str(value).lower() if isinstance(value, bool) else value}"
        fix = fix_of(refused([STAGE1, typed]))
        assert fix.startswith("set it where it lives: ") and f"{key}=" in fix, (typed, fix)
        validates([STAGE1, fix.removeprefix("set it where it lives: ")])


def test_typed_leaves_reads_pydantics_nested_input_back_into_keys() -> None:
    assert typed_leaves("train", {"optimizer": {"lr": 1e-6}}) == [("train.optimizer.lr", 1e-6)]
    assert typed_leaves("lr", 1e-6) == [("lr", 1e-6)]
