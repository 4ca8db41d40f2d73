"""Override lines drawn from the grammar of Hydra's overrides (prefix, group or key, `@package`, value
or condition) on top of a valid experiment: whatever the line, `t3rl validate` accepts it or refuses it
with exit code 2, and a refusal names where the mistake was made (never "(schema default)", which is
what a problem with no source reads as: `~executor@foo=x` and `model@model=x` were blamed there) and
proposes a fix, whose first alternative, applied, clears the problem. The grammar's pieces are the ways
a line goes wrong; 120 lines drawn from it with a fixed seed, the same every run."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support.cli_app import fix_of, invoke
from tests.support.fix_applier import apply_first_fix

BASE = ["+experiment=stage1_bfcl"]
GROUPS = ("model", "reward", "hardware", "tracking", "executor", "env", "experiment", "user_sim", "nosuch")
PACKAGES = ("model", "foo", "_global_", "stages.train", "")
OPTIONS = ("qwen3_4b", "qwen3_8b", "binary", "none", "wandb", "local", "h200x8", "nosuch", "Qwen3_4B")
KEYS = (
    "seed",
    "name",
    "stages.train.curriculum.optimizer.lr",
    "eval.repeats",
    "model.name",
    "tracking",
    "nosuch",
    "stages.train",
    "hydra.sweeper",
)
VALUES = (
    "1", "null", "''", "[a,b]", "{a:1}", "choice(1,2)", "nofunc(1)", "${seed}", "${nope}", "'x y'",
    "1e-6", "true", "a=b", "range(1,3)", "[]", "{}", "interval(0,1)", "sort(1,2)", "x,y",
)  # fmt: skip
PREFIXES = ("", "+", "++", "~")


def _line(draw: random.Random) -> str:
    prefix = draw.choice(PREFIXES)
    if draw.random() < 0.5:
        key = draw.choice(GROUPS)
        if draw.random() < 0.4:
            key += "@" + draw.choice(PACKAGES)
        value = draw.choice(OPTIONS + VALUES[:6])
    else:
        key, value = draw.choice(KEYS), draw.choice(VALUES + OPTIONS[:3])
    if prefix == "~" and draw.random() < 0.5:
        return prefix + key
    return f"{prefix}{key}={value}"


def _lines() -> list[list[str]]:
    draw = random.Random(20261128)
    return [[_line(draw) for _ in range(draw.choice((1, 1, 2)))] for _ in range(120)]


@pytest.mark.parametrize("typed", _lines(), ids=" ".join)
def test_a_drawn_override_line_is_accepted_or_refused_where_it_was_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(["validate", *BASE, *typed])
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        errors = [line for line in result.output.splitlines() if line.startswith("error ")]
        assert errors, result.output
        assert "(schema default)" not in result.output, result.output
        assert "fix:" in result.output, result.output
        if len(typed) == 1 and len(errors) == 1:
            _first_fix_clears_its_problem(typed, result.output, errors[0])


def _first_fix_clears_its_problem(typed: list[str], output: str, error_line: str) -> None:
    """One mistake's first fix, applied as a user would, leaves the config without that problem (a value
    with a second mistake, `++tracking=nosuch`, may then be refused for the other one)."""
    lines = output.splitlines()
    at = lines.index(error_line)
    fix = fix_of(output)
    if " -m " in fix:  # a sweep's fix is a flag of the command, not an override
        return
    error = {
        "message": error_line.partition(": ")[2],
        "source": lines[at + 1].strip().removeprefix("set in: "),
        "fix": fix,
    }
    fixed = apply_first_fix([*BASE, *typed], error)
    if fixed is None:
        return
    again = invoke(["validate", *fixed])
    assert error_line not in again.output.splitlines(), f"{fixed}\n{output}\n{again.output}"
