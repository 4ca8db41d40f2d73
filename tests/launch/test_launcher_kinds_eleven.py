"""Launcher kinds of round eleven: a sweep extended by what its overrides mean, not as typed.

Round ten made `t3rl run -m … seed=1,2` then `… seed=1,2,3` extend the first sweep. It compared the
overrides as text: `paths.runs_dir=../runs` typed in a subdirectory (the same directory as
`paths.runs_dir=runs` typed above it), `lr=1e-6` after `lr=0.000001`, each started a new sweep and ran
every point again. An override is compared by its meaning (launch.run.sweep_extend.override_meaning).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.run.sweep_extend import override_meaning, point_meaning
from tests.launch.test_launcher_kinds_ten import _sweep
from tests.support.retool_prepare_only import rec_config_dir

# --- meanings ---------------------------------------------------------------------------------------------


def _spellings(value: Decimal) -> list[str]:
    """Ways an override may write one number: plain, with an exponent, with trailing zeros."""
    sign, digits, exponent = value.as_tuple()
    mantissa = ("-" if sign else "") + "".join(map(str, digits))
    plain = format(value, "f")
    spelled = [plain, f"{mantissa}e{exponent}", f"{mantissa}E{exponent:+d}"]
    if "." in plain:
        spelled.append(plain + "000")
    elif len(plain.lstrip("-")) > 3:
        spelled.append(f"{plain[:-3]}_{plain[-3:]}")  # Hydra reads 1_000 as 1000
    return spelled


@settings(max_examples=200, deadline=None)
@given(
    value=st.decimals(
        allow_nan=False, allow_infinity=False, places=None, min_value=-(10**12), max_value=10**12
    ),
    other=st.decimals(allow_nan=False, allow_infinity=False, min_value=-(10**12), max_value=10**12),
)
def test_a_number_means_its_value_however_it_is_written(value: Decimal, other: Decimal) -> None:
    meanings = {override_meaning(f"optimizer.lr={s}", "/w", ()) for s in _spellings(value)}
    assert len(meanings) == 1, (_spellings(value), meanings)
    (meaning,) = meanings
    assert (meaning == override_meaning(f"optimizer.lr={format(other, 'f')}", "/w", ())) == (value == other)


@pytest.mark.parametrize(
    ("typed", "where"),
    [
        ("runs", "/w"),
        ("../runs", "/w/sub"),
        ("./x/../runs", "/w"),
        ("/w/runs", "/elsewhere"),
        ("../../runs", "/w/a/b"),
    ],
)
def test_a_path_means_the_directory_it_names_from_where_it_was_typed(typed: str, where: str) -> None:
    keys = {"paths.runs_dir"}
    assert override_meaning(f"paths.runs_dir={typed}", where, keys) == ("paths.runs_dir", "/w/runs")


def test_what_is_no_path_and_no_number_means_what_it_says() -> None:
    keys = {"paths.runs_dir"}
    assert override_meaning("name=../runs", "/w/sub", keys) == ("name", "../runs")  # no path field
    assert override_meaning("paths.runs_dir=${oc.env:X}", "/w", keys) == ("paths.runs_dir", "${oc.env:X}")
    assert override_meaning("reward=progress", "/w", keys) == ("reward", "progress")
    assert override_meaning("version=1.2.3", "/w", keys) == ("version", "1.2.3")
    assert override_meaning("+experiment=rec", "/w", keys) == ("+experiment", "rec")
    assert override_meaning("~hooks", "/w", keys) == ("~hooks", "")
    # a prefix changes what an override does: +key adds, key sets
    assert override_meaning("+seed=1", "/w", keys) != override_meaning("seed=1", "/w", keys)


@given(st.permutations(["seed=1", "optimizer.lr=1e-6", "paths.runs_dir=runs", "reward=progress"]))
def test_independent_overrides_mean_the_same_in_any_order(order: list[str]) -> None:
    typed = ["seed=1", "optimizer.lr=0.000001", "paths.runs_dir=../runs", "reward=progress"]
    keys = {"paths.runs_dir"}
    assert point_meaning(order, "/w", keys) == point_meaning(typed, "/w/sub", keys)


# --- a sweep extended from another directory, in another spelling --------------------------------------


def test_a_sweep_extended_from_a_subdirectory_with_its_runs_dir_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a second sweep dir beside the first, every point run again."""
    conf = rec_config_dir(tmp_path, monkeypatch)
    _sweep(conf, "seed=1,2", "paths.runs_dir=runs")
    (sweep,) = (tmp_path / "runs" / "rec").iterdir()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    result = _sweep(conf, "paths.runs_dir=../runs", "seed=2,3,1")
    assert [d.name for d in (tmp_path / "runs" / "rec").iterdir()] == [sweep.name], result.output
    assert "extending" in result.output, result.output
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert {" ".join(p["varying"]): p["index"] for p in points} == {"seed=1": 0, "seed=2": 1, "seed=3": 2}
