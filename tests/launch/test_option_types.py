"""t3rl's re-implementations of Megatron's type functions accept and reject exactly what Megatron's
functions do (as the project's stand-in for Megatron's argument module states them), and the argv
checker applies them, the choices and the no-duplicate rule."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config.errors import ConfigError
from launch.plan.option_types import int_tuple, layer_pattern, value_problem
from launch.plan.slime_options import check_argv

MEGATRON_ARGS = (
    Path(__file__).resolve().parents[1]
    / "fixtures/slime_options/Megatron-LM/megatron/training/arguments.py"
)


def megatron():
    spec = importlib.util.spec_from_file_location("megatron_arguments_excerpt", MEGATRON_ARGS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MEGATRON = megatron()


def outcome(fn, value: str):
    try:
        return ("ok", fn(value))
    except (ValueError, TypeError, SyntaxError, AssertionError):
        return ("rejected", None)


PATTERNS = [
    "1", "4", "[0,0,0,1]", "[0, 0, 0, 1]", "([0]*3+[1]*58)", "[0]*3+[1]*58", "([1]*3+[0]*2)*2",
    "[1,1", "[a]", "x", "", "[0]*3 + [1]", "(1,2)", "[]", "[[1]]", "2*[1]", "[0]+-1",
]  # fmt: skip


@pytest.mark.parametrize("value", PATTERNS)
def test_layer_pattern_matches_megatrons_moe_freq_type(value: str) -> None:
    assert outcome(layer_pattern, value) == outcome(MEGATRON.moe_freq_type, value)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789,[]()+* ", max_size=14))
def test_layer_pattern_agrees_on_arbitrary_strings(value: str) -> None:
    ours, theirs = outcome(layer_pattern, value), outcome(MEGATRON.moe_freq_type, value)
    assert ours[0] == theirs[0], value
    if ours[0] == "ok":
        assert ours[1] == theirs[1]


@pytest.mark.parametrize("value", ["1,2,3", "(1,2,3)", "4", "(1, 2)", "a,b", ""])
def test_int_tuple_matches_megatrons_tuple_type(value: str) -> None:
    assert outcome(int_tuple, value) == outcome(MEGATRON.tuple_type, value)


def test_value_problem_checks_types_and_choices() -> None:
    assert value_problem("int", None, "8") is None
    assert "invalid int" in value_problem("int", None, "8.0")
    assert value_problem("float", None, "1e-6") is None
    assert "invalid choice" in value_problem("str", ("rope", "none"), "yarn")
    assert value_problem("enum", ("flash", "auto"), "flash") is None
    assert "not known" in value_problem("mystery_type", None, "1")
    assert value_problem("mystery_type", ("a",), "a") is None


def test_check_argv_rejects_duplicates_bad_values_and_bad_choices() -> None:
    check_argv(["--moe-layer-freq", "[0,1]", "--rotary-base", "10000", "--lr", "1e-6"], key="k")
    for argv, words in [
        (["--lr", "1e-6", "--lr", "2e-6"], "given twice"),
        (["--moe-layer-freq", "[0, 1]"], "invalid moe_freq_type"),
        (["--rotary-base", "5e6"], "invalid int"),
        (["--position-embedding-type", "yarn"], "invalid choice"),
        (["--seed=abc"], "invalid int"),
        (["--eval-prompt-data", "bfcl", "/data/v.jsonl", "--eval-prompt-data", "x", "y"], "given twice"),
    ]:
        with pytest.raises(ConfigError, match=words):
            check_argv(argv, key="stages.train")
