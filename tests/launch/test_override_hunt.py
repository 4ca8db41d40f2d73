"""Command lines Hydra accepts that t3rl read as another config, found by hunting the override grammar:

- a sweep's key typed twice (`-m … seed=1,2 … seed=3`, `hardware=a … hardware=b`, `+experiment=a …
  +experiment=b`): Hydra's split keeps the last override of each key as typed before any point is built,
  so no point saw it set twice: the sweep shrank to one point, or ran another experiment, without a word
  (a run's line warns, and refuses two experiments); `launch.run.sweep.collapsed_overrides` judges the
  typed line as a run's line is judged;
- a sweep point quoting what nobody typed: Hydra's split writes `~key` back as `~key=null`, and every
  message and fix of the point named that; a point holds each override it does not sweep as typed;
- `t3rl validate -m` printed none of a point's warnings (`plan -m` and `run -m` print them as they plan
  each point), so a key set twice within a point (`seed=1,2 ++seed=3`: two runs of seed 3) passed silently;
- a key set, then deleted (`eval.repeats=5 … ~eval.repeats`, `tracking=wandb … ~tracking`): the
  deletion won and the value typed was silently the default; now warned as a key set twice;
- `~key=value` where the key holds another value: "holds no value here (null, or no file sets it)",
  which it does; `~group=option` where another option is chosen: "not a config group of the defaults
  list", no source, and "did you mean" the group itself. The value after `=` is a condition;
- a function of Hydra's grammar that Hydra ran and refused (`seed=choice()`, `int(abc)`, `range(a)`,
  `glob()`): the fix quoted it, the text 'choice()', which the number refused again;
- a sweep with no value to list (`shuffle()`, Hydra's parser takes it; `choice(1,choice(2))`, which
  OmegaConf cannot list): AttributeError, ValidationError or ZeroDivisionError (a search) in Python's
  words; every reader of a sweep's values now lists them in one place
  (`launch.config.override_fixes.sweep_strings`);
- a glob matching one option (`reward=glob(bin*)`): its one point had no name in the points table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from launch.config.compose import parse_overrides
from launch.run.sweep import collapsed_overrides, expand_points
from tests.support.cli_app import fix_of, invoke, warnings_of
from tests.support.fix_applier import apply_first_fix
from tests.support.no_slime import cli_workdir

QUICK = "+experiment=quickstart"
S1 = "+experiment=stage1_bfcl"
LR = "stages.train.curriculum.optimizer.lr"


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return cli_workdir(tmp_path / "work", monkeypatch)


def _written(here: Path) -> list[Path]:
    return [p for p in here.rglob("*") if p.is_file() and "cache" not in p.parts]


# ---------------------------------------------------------------------------- a sweep's key typed twice

TWICE = [
    (["seed=1,2", "seed=3"], "seed", "`seed=1,2` is replaced by `seed=3`"),
    (["seed=1,2", "seed=3,4"], "seed", "`seed=1,2` is replaced by `seed=3,4`"),
    (["seed=1", "seed=2"], "seed", "`seed=1` is replaced by `seed=2`"),
    (["seed=1,2", "reward=binary", "reward=progress"], "reward", "`reward=binary` is replaced by"),
]


@pytest.mark.parametrize(("typed", "key", "said"), TWICE, ids=[" ".join(t) for t, _, _ in TWICE])
@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_key_a_sweep_sets_twice_is_warned_as_a_run_warns_it(
    command: str, typed: list[str], key: str, said: str
) -> None:
    result = invoke([command, "-m", QUICK, *typed])  # was: no warning, the first silently dropped
    assert result.exit_code == 0, result.output
    blocks = [w for w in warnings_of(result.output) if w["key"] == key]
    assert blocks and said in blocks[0]["message"], result.output
    assert blocks[0]["fix"].startswith("drop `"), blocks[0]


@pytest.mark.parametrize(
    "typed",
    [
        [QUICK, "seed=1,2", "+experiment=bfcl_debug"],
        [QUICK, "+experiment=quickstart,bfcl_debug", "+experiment=bfcl_debug"],
    ],
)
@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_two_experiments_in_a_sweep_are_refused_before_anything_is_written(
    command: str, typed: list[str], here: Path
) -> None:
    result = invoke([command, "-m", *typed])  # was: valid, every point ran the last experiment alone
    assert result.exit_code == 2, result.output
    assert "error experiment: two experiments on one command line" in result.output, result.output
    assert _written(here) == [], _written(here)
    for _ in typed:  # each first fix applied, as a user would, until the line validates
        fix = re.search(r"^\s+fix: (.*)$", result.output, re.M)
        assert fix is not None, result.output
        fixed = apply_first_fix(typed, {"message": "", "source": "", "fix": fix[1]})
        assert fixed is not None and len(fixed) < len(typed), fix[1]
        typed, result = fixed, invoke(["validate", "-m", *fixed])
        if result.exit_code == 0:
            return
    raise AssertionError(result.output)


_KEYS = st.sampled_from(["seed", "+seed", "++seed", "name", "eval.repeats"])
_VALUES = st.lists(st.integers(1, 4), min_size=1, max_size=2).map(lambda v: ",".join(map(str, v)))


@given(st.lists(st.tuples(_KEYS, _VALUES), min_size=1, max_size=5))
def test_no_typed_override_vanishes_from_a_sweep_unnamed(pairs: list[tuple[str, str]]) -> None:
    """Every override typed reaches each point (as typed, or as one of its values), or a problem of the
    typed line names it: Hydra's split drops none silently."""
    typed = [f"{key}={value}" for key, value in pairs]
    points = expand_points(typed)
    named = {p.source.removeprefix("override `").removesuffix("`") for p in collapsed_overrides(typed)}
    for override, parsed in zip(typed, parse_overrides(typed), strict=True):
        key = parsed.get_key_element()
        values = {f"{key}={v}" for v in parsed.value().list} if parsed.is_sweep_override() else {override}
        held = all(values & set(point.overrides) for point in points)
        assert held or override in named, (typed, override, [p.overrides for p in points])


# --------------------------------------------------------------------------- points hold what was typed


@pytest.mark.parametrize("deletion", ["~eval.repeats", "~stages.eval_tiny"])
def test_a_point_holds_a_deletion_as_typed(deletion: str) -> None:
    points = expand_points([QUICK, "seed=1,2", deletion])  # was `~…=null`, quoted by every message
    assert all(deletion in point.overrides for point in points), [p.overrides for p in points]
    result = invoke(["validate", "-m", QUICK, "seed=1,2", deletion])
    assert "=null" not in result.output, result.output


# ----------------------------------------------------------------------------------- a point's warnings


def test_validate_m_prints_a_points_warnings_as_plan_m_does() -> None:
    typed = [QUICK, "seed=1,2", "++seed=3"]  # both points run seed 3
    for command in ("validate", "plan"):
        result = invoke([command, "-m", *typed])  # validate -m was silent
        assert result.exit_code == 0, result.output
        said = [w["message"] for w in warnings_of(result.output) if w["key"] == "seed"]
        assert any("is replaced by `++seed=3`" in m for m in said), (command, result.output)


# ------------------------------------------------------------------------------------ set, then deleted


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        (["eval.repeats=5", "~eval.repeats"], "eval.repeats"),
        (["eval.repeats=5", "~eval.repeats=5"], "eval.repeats"),
        (["tracking=wandb", "~tracking"], "tracking"),
        (["stages.train.curriculum.optimizer.lr=2e-6", "~stages.train.curriculum.optimizer"], LR),
    ],
)
def test_a_key_set_then_deleted_is_warned_and_its_fix_clears_it(typed: list[str], key: str) -> None:
    argv = [S1, *typed]
    result = invoke(["validate", *argv], COLUMNS="400")  # was: valid, silently the default
    blocks = [w for w in warnings_of(result.output) if w["key"] == key]
    assert len(blocks) == 1 and "set, then deleted" in blocks[0]["message"], result.output
    fixed = apply_first_fix(argv, blocks[0])
    assert fixed is not None
    again = invoke(["validate", *fixed], COLUMNS="400")
    assert f"warning {key}: set, then deleted" not in again.output, again.output


def test_a_deletion_set_again_later_is_no_warning() -> None:
    result = invoke(["validate", S1, "~tracking", "tracking=wandb", "tracking.project=p"])
    assert "set, then deleted" not in result.output, result.output


# ------------------------------------------------------------------------------ `~key=value` conditions


@pytest.mark.parametrize(
    ("typed", "key", "said"),
    [
        ("~eval.repeats=5", "eval.repeats", "only while it is 5, but it is 3 here"),
        ("~seed=7", "seed", "only while it is 7, but it is 42 here"),
        ("~tracking=wandb", "tracking", "only while its option is wandb"),
        ("~model=qwen3_8b", "model", "only while its option is qwen3_8b"),
    ],
)
def test_a_deletion_whose_condition_fails_says_so_with_a_fix_that_validates(
    typed: str, key: str, said: str
) -> None:
    result = invoke(["validate", S1, typed], COLUMNS="400")
    assert result.exit_code == 2, result.output
    first = result.output.splitlines()[0]
    assert first.startswith(f"error {key}: `{typed}` deletes"), result.output
    assert said in first and "holds no value" not in first and "not a config group" not in first, first
    assert re.search(rf"set in: override `{re.escape(typed)}`", result.output), result.output
    fix = fix_of(result.output)
    assert fix.startswith(f"drop `{typed}`"), fix
    assert invoke(["validate", S1]).exit_code == 0


# ----------------------------------------------------------------------------- functions Hydra refused

REFUSED_CALLS = ["seed=choice()", "seed=int(abc)", "seed=range(a)", "seed=glob()", "seed=tag(a,1,2)"]


@pytest.mark.parametrize("typed", REFUSED_CALLS)
@pytest.mark.parametrize("multirun", [False, True], ids=["run", "-m"])
def test_a_function_hydra_refused_is_dropped_not_quoted(typed: str, multirun: bool) -> None:
    argv = ["validate", *(["-m"] if multirun else []), QUICK, typed]
    result = invoke(argv, COLUMNS="400")
    assert result.exit_code == 2, result.output
    fix = fix_of(result.output)
    assert fix.startswith(f"drop `{typed}`"), fix  # was: "seed='choice()'", refused again
    fixed = apply_first_fix(argv[1:], {"message": "", "source": "", "fix": fix})
    assert fixed is not None and invoke(["validate", *fixed]).exit_code == 0


NO_VALUES = ["seed=shuffle()", "seed=choice(1,choice(2))"]


@pytest.mark.parametrize("typed", NO_VALUES)
@pytest.mark.parametrize(
    "command",
    [["validate"], ["validate", "-m"], ["plan", "-m"], ["run", "-m"]],
    ids=lambda c: " ".join(c),
)
def test_a_sweep_with_no_value_is_refused_at_its_key(typed: str, command: list[str], here: Path) -> None:
    result = invoke([*command, QUICK, typed])  # was: a traceback (AttributeError, ValidationError)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error seed: '{typed}' lists no value a run can take"), result.output
    assert fix_of(result.output).startswith(f"drop `{typed}`")
    assert _written(here) == []


@pytest.mark.parametrize("typed", [f"{LR}=shuffle()", f"{LR}=choice(1e-6,choice(2e-6))"])
def test_a_search_entry_with_no_value_is_refused_at_its_key(typed: str) -> None:
    result = invoke(["validate", "-m", S1, "hparams_search=bfcl_lr_kl_reward", typed])
    assert result.exit_code == 2, result.output  # shuffle() was a ZeroDivisionError
    assert result.output.startswith(f"error {LR}: '{typed}' lists no value"), result.output


def test_a_glob_of_one_option_names_its_point() -> None:
    (point,) = expand_points([QUICK, "reward=glob(bin*)"])
    assert point.varying == ("reward=binary",)  # was (): a point of no name


# ------------------------------------------------------------------- an interpolation of no key typed


@pytest.mark.parametrize(
    "typed",
    ["name=${missing.key}", "name=x${missing}y", "eval.repeats=${hardware.nonexistent_thing}"],
)
def test_an_interpolation_of_no_key_typed_is_dropped(typed: str) -> None:
    """Was prose ("fix the ${...} interpolation"), or for a section's missing key "give it a value in"
    the section's file, which the schema refuses as an unknown key."""
    result = invoke(["validate", S1, typed], COLUMNS="400")
    assert result.exit_code == 2, result.output
    assert fix_of(result.output).startswith(f"drop `{typed}`"), result.output
    fixed = apply_first_fix([S1, typed], {"message": "", "source": "", "fix": fix_of(result.output)})
    assert fixed == [S1]
