"""A misspelt interpolation in a config file of your own is answered with the nearest key whose
correction resolves: the nearest can be the key itself (`repeats: ${eval.reps}` → `${eval.repeats}`)
or a key that reads it back, and either fix fails as "Recursive interpolation" when applied."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli_app import fix_of, refused, validates

_HEADER = "# @package _global_\ndefaults:\n  - /experiment/quickstart\n  - _self_\n"


@pytest.mark.parametrize(
    ("body", "key", "fix"),
    [
        # nearest is the key itself: the fix names no key then (eval.repeats=${eval.repeats} reads itself)
        ("eval:\n  repeats: ${eval.reps}\n", "eval.repeats", None),
        # nearest is the key itself, the next nearest resolves
        (
            "eval:\n  engine:\n    timeout_s: ${eval.engine.timeout}\n",
            "eval.engine.timeout_s",
            "set eval.engine.timeout_s=${eval.engine.health_timeout_s}",
        ),
        # nearest reads the key back (a cycle through another key), and no other is near
        ("eval:\n  seed: ${eval.repeatz}\n  repeats: ${eval.seed}\n", "eval.seed", None),
    ],
    ids=["only-itself", "itself-then-another", "a-cycle"],
)
def test_the_proposed_interpolation_resolves(tmp_path: Path, body: str, key: str, fix: str | None) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(_HEADER + body)
    argv = ["--config-dir", str(tmp_path), "+experiment=mine"]
    out = refused(argv)
    assert f"error {key}: cannot resolve the value" in out, out
    proposed = fix_of(out)
    if fix is None:
        assert "did you mean" not in proposed, proposed
        return
    assert proposed.startswith(fix + " "), proposed
    override = proposed.removeprefix("set ").split(" ")[0]
    validates([*argv, override])


def test_a_key_only_the_schema_sets_is_added_by_the_fix() -> None:
    """`eval.repeats` is t3rl's default and no shipped file restates it, so `${eval.repeats}` names no key
    of the composition: the fix was "give eval.repeats a value in conf/eval/default.yaml", a shipped file."""
    argv = ["+experiment=quickstart", "eval.seed=${eval.repeats}"]
    proposed = fix_of(refused(argv))
    assert proposed.startswith("add +eval.repeats=1 "), proposed
    validates([*argv, "+eval.repeats=1"])


def test_a_list_element_that_reads_no_key_is_named_by_its_index() -> None:
    """OmegaConf names the element `pass_k[1]`, which every reader of keys took for a mapping's key: the
    command ended in "t3rl failed unexpectedly: ConfigAttributeError"."""
    out = refused(["+experiment=quickstart", "eval.pass_k=[1,${eval.sed}]"])
    assert "error eval.pass_k.1: cannot resolve the value: Interpolation key 'eval.sed' not found" in out, out
