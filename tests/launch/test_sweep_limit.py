"""A sweep's size is known before any point is composed: a typo's thousands of runs are refused at once
with the largest dimension cut to fit, `glob(...)` sweeps its group's options, and `interval(...)` or an
empty range is one clear error instead of Hydra's exception."""

from __future__ import annotations

import math
import re
import shlex

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config.compose import group_options, parse_overrides
from launch.config.errors import ConfigError
from launch.run.sweep import expand_points
from launch.run.sweep_bounds import MAX_POINTS, MOST_POINTS
from launch.run.sweep_limit import check_size
from tests.support import cli_hunt


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})
    return result.exit_code, result.output


def _refusal(overrides: list[str], max_points: int = MAX_POINTS) -> ConfigError:
    try:
        expand_points(overrides, max_points=max_points)
    except ConfigError as error:
        return error
    raise AssertionError(f"{overrides} was expanded")


def _first_fix_override(error: ConfigError) -> str:
    """The override the first fix proposes (a shell word, quoted or not)."""
    fix = error.problems[0].fix
    return shlex.split(re.split(r" \(|;", fix)[0])[0]


def test_a_huge_range_is_refused_before_any_point_is_listed() -> None:
    # Ten million points: listing them (Hydra's product) would take minutes and gigabytes.
    error = _refusal(["seed=range(0,10000000)", "reward=progress,binary"])
    (problem,) = error.problems
    assert problem.key == "seed"
    assert "20000000 points (10000000 × 2)" in problem.message
    assert problem.source == "override `seed=range(0,10000000)`"
    # More points than --max-points takes: the fix does not propose a bound the option refuses.
    assert "--max-points 20000000" not in problem.fix and f"at most {MOST_POINTS}" in problem.fix
    fixed = _first_fix_override(error)
    assert fixed == f"seed=range(0,{MAX_POINTS // 2})"
    assert len(expand_points([fixed, "reward=progress,binary"])) == MAX_POINTS


def test_the_bound_is_the_callers_and_a_sweep_within_it_expands() -> None:
    assert len(expand_points(["seed=range(0,300)"], max_points=300)) == 300
    assert "--max-points 301" in _refusal(["seed=range(0,301)"], max_points=300).problems[0].fix


def test_when_the_other_dimensions_alone_exceed_the_bound_the_fix_splits_the_sweep() -> None:
    error = _refusal(["seed=range(0,20)", "stages.train.curriculum.num_rollout=range(1,20)"], max_points=10)
    assert "split it into several sweeps of at most 10 points" in error.problems[0].fix


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=4),
    bound=st.integers(min_value=1, max_value=200),
    as_range=st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_property_a_refused_sweep_is_fixed_by_its_first_fix(
    sizes: list[int], bound: int, as_range: list[bool]
) -> None:
    overrides = [
        f"k{i}=range(3,{3 + n * 2},2)" if as_range[i] else f"k{i}={','.join(f'v{j}' for j in range(n))}"
        for i, n in enumerate(sizes)
    ]
    total = math.prod(sizes)
    if total <= bound:
        assert check_size(parse_overrides(overrides), lambda group: [], bound) == total
        return
    error = _refusal(overrides, max_points=bound)
    if total // max(sizes) > bound:
        assert "split it into several sweeps" in error.problems[0].fix
        return
    fixed = _first_fix_override(error)
    key = fixed.split("=", 1)[0]
    narrowed = [fixed if o.split("=", 1)[0] == key else o for o in overrides]
    points = expand_points(narrowed, max_points=bound)
    assert 0 < len(points) <= bound
    # The narrowed dimension keeps its first values: the fix cuts, it does not invent.
    kept = {p.overrides[int(key[1:])] for p in points}
    assert kept <= {p.overrides[int(key[1:])] for p in expand_points(overrides, max_points=total)}


def test_a_glob_sweeps_the_options_of_its_group() -> None:
    points = expand_points(["model=glob(qwen3_*)"])
    expected = [o for o in group_options("model") if o.startswith("qwen3_")]
    assert [p.varying for p in points] == [(f"model={o}",) for o in expected]
    code, out = _invoke("validate", "-m", "+experiment=stage1_bfcl", "model=glob(qwen3_4b_*)")
    assert code == 0, out
    assert "model=qwen3_4b_instruct_2507" in out and "2 sweep points" in out


def test_a_glob_matching_nothing_or_not_over_a_group_is_a_config_error() -> None:
    code, out = _invoke("validate", "-m", "+experiment=quickstart", "model=glob(zzz*)")
    assert code == 2, out
    assert "matches none of the" in out and "qwen3_8b" in out
    error = _refusal(["model=glob(zzz*)"])
    assert len(expand_points([_first_fix_override(error)])) == 2
    code, out = _invoke("validate", "-m", "+experiment=quickstart", "seed=glob(*)")
    assert code == 2 and "seed is not a config group" in out, out


def test_an_interval_outside_a_search_is_a_config_error_in_both_commands() -> None:
    for args in (["-m"], []):
        code, out = _invoke("validate", *args, "+experiment=quickstart", "seed=interval(0,3)")
        assert code == 2, out
        assert "is a search range" in out and "seed=0,3" in out and "unexpectedly" not in out


def test_a_glob_without_m_asks_for_m() -> None:
    code, out = _invoke("validate", "+experiment=quickstart", "model=glob(qwen*)")
    assert code == 2, out
    assert "add -m to sweep it" in out and "unexpectedly" not in out


def test_an_empty_range_is_refused_with_the_step_turned() -> None:
    error = _refusal(["seed=range(5,0)"])
    assert "has no values" in error.problems[0].message
    assert [p.varying for p in expand_points([_first_fix_override(error)])] == [
        (f"seed={n}",) for n in (5, 4, 3, 2, 1)
    ]


def test_max_points_is_an_option_of_run_plan_and_validate_and_its_help_says_the_default() -> None:
    for command in ("run", "plan", "validate"):
        code, out = _invoke(command, "--help")
        assert code == 0 and "--max-points" in out and f"default {MAX_POINTS}" in out, out
    code, out = _invoke("validate", "-m", "--max-points", "3", "+experiment=quickstart", "seed=range(0,4)")
    assert code == 2 and "4 points" in out and "seed=range(0,3)" in out, out
    code, out = _invoke("validate", "-m", "--max-points", "0", "+experiment=quickstart", "seed=1,2")
    assert code == 2, out


def test_the_most_points_the_option_takes_is_the_sweep_limits_and_its_fix_stays_within_it() -> None:
    """`--max-points N` is proposed up to the option's declared most, never beyond it (refused there)."""
    declared = {p.high for p in cli_hunt.parameters() if p.name == "--max-points"}
    assert declared == {MOST_POINTS}  # run, plan and validate, as parsed
    assert f"--max-points {MOST_POINTS}" in _refusal([f"seed=range(0,{MOST_POINTS})"]).problems[0].fix
    beyond = _refusal([f"seed=range(0,{MOST_POINTS + 1})"]).problems[0].fix
    assert "--max-points " not in beyond.replace("--max-points takes", ""), beyond
