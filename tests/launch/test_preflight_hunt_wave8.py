"""Hunt wave 8: config keys, groups, the launcher and the job. Kinds no earlier hunt closed, each closed by
a declaration:

- a reference to an item of a list beside it that names none (`NamesItem`: `eval.published.target` is one of
  the results' labels), two files setting the two (`+published=retool` under stage1_bfcl's own target);
- `${oc.select:KEY}` naming no key (rules/selections.py): OmegaConf gives null without a word;
- `RAY_ADDRESS` exported here, read by `executor.address`'s kind when the key is unset (rules/ray_address.py);
- an option typed under another group, answered with the groups that have it: each tried with the rest of
  the line first (launch/checks/other_groups_tried.py: `sandbox=local` under BFCL is not offered);

See docs/explanation/preflight.md, "Hunt wave eight: keys, groups, launcher".
"""

from __future__ import annotations

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import Problem
from tests.support.in_tmp import in_tmp
from tests.support.refusals import errors, fixed

S1 = "+experiment=stage1_bfcl"

_in_tmp = in_tmp()  # relative paths of the configs resolve in one empty dir


def _refused_at(overrides: list[str], key: str) -> Problem:
    (found,) = [e for e in errors(overrides) if e.key == key]
    return found


# ------------------------------------------------------------------ a reference to an item that names none


def test_a_published_option_chosen_under_an_experiments_own_target() -> None:
    line = [S1, "+published=retool"]
    found = _refused_at(line, "eval.published.target")
    # was: at eval.published, the whole section quoted back, fix `eval.published=null` (the choice dropped)
    assert (
        "conf/experiment/stage1_bfcl.yaml" in found.message and "conf/published/retool.yaml" in found.message
    )
    assert found.source.endswith("override `+published=retool`)")
    assert found.fix.startswith("set eval.published.target=null") and "drop `+published=retool`" in found.fix
    assert errors(fixed(line, found)) == []


def test_a_target_typed_that_names_no_result_gets_the_nearest_label() -> None:
    line = [S1, "eval.published.target=T3RL stage1"]
    found = _refused_at(line, "eval.published.target")
    assert found.source == "override `eval.published.target=T3RL stage1`"
    assert "'T3RL stage 1'" in found.fix.partition(";")[0]
    assert errors(fixed(line, found)) == []


@pytest.mark.parametrize(
    "line",
    [
        [S1, "+published=retool", "eval.published.target=null"],
        [S1, "eval.published.target='T3RL stage 1'"],
    ],
)
def test_a_reference_that_names_an_item_is_valid(line: list[str]) -> None:
    assert errors(line) == []


# ------------------------------------------------------------------ a selection that names no key


@pytest.mark.parametrize(
    ("typed", "fix"),
    [
        # was: valid, top-p null (unset); the nearest eval key, top_k, is no top-p (-1): not offered
        ("eval.top_p=${oc.select:eval.topp}", "drop `eval.top_p=${oc.select:eval.topp}`"),
        # was: valid, no group named
        ("tracking.group=${oc.select:trackin.project}", "set tracking.group=${oc.select:tracking.project}"),
    ],
)
def test_a_selection_of_no_key_is_refused(typed: str, fix: str) -> None:
    found = _refused_at([S1, typed], typed.partition("=")[0])
    assert found.fix.startswith(fix), found.fix
    assert errors(fixed([S1, typed], found)) == []


def test_a_selection_with_a_default_warns_only_beside_a_key_spelt_alike() -> None:
    spelt = resolve([S1, "tracking.group=${oc.select:tracking.projct,null}"]).warnings
    assert any(w.key == "tracking.group" and "tracking.project" in w.fix for w in spelt)
    other = resolve([S1, "tracking.group=${oc.select:nothing.here,mine}"]).warnings
    assert not any("oc.select" in w.message for w in other)  # a default meant for configs without it
    assert errors([S1, "tracking.group=${oc.select:tracking.project}"]) == []


# ------------------------------------------------------------------ RAY_ADDRESS exported here


@pytest.mark.parametrize(
    ("exported", "meant"),
    [
        ("auto", "http://127.0.0.1:8265"),  # was: valid, submitted to a dashboard at a host named auto
        ("10.0.0.1:6379", "http://10.0.0.1:8265"),  # ray.init's GCS address: no Job API there
    ],
)
def test_an_exported_ray_address_is_read_by_the_keys_kind(
    monkeypatch: pytest.MonkeyPatch, exported: str, meant: str
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", exported)
    line = [S1, "executor=ray"]
    found = _refused_at(line, "executor.address")
    assert found.source.startswith("$RAY_ADDRESS") and repr(exported) in found.message
    assert found.fix.startswith(f"set executor.address={meant}")
    assert errors(fixed(line, found)) == []


@pytest.mark.parametrize("exported", ["10.0.0.1:8265", "http://head:8265", "ray://head:10001"])
def test_an_exported_dashboard_is_valid(monkeypatch: pytest.MonkeyPatch, exported: str) -> None:
    monkeypatch.setenv("RAY_ADDRESS", exported)
    assert errors([S1, "executor=ray"]) == []


# ------------------------------------------------------------------ an option of other groups, each tried


def test_an_option_of_other_groups_offers_only_the_groups_the_line_takes() -> None:
    line = [S1, "tracking=local"]
    found = _refused_at(line, "tracking")
    # was: "executor=local or sandbox=local instead of …": BFCL's env has no sandbox, refused when applied
    assert found.fix.startswith("executor=local instead of `tracking=local`"), found.fix
    assert "sandbox=local is refused in turn at env.sandbox" in found.fix
    assert errors(fixed(line, found)) == []


def test_an_option_of_other_groups_the_line_takes_both() -> None:
    found = _refused_at(["+experiment=retool", "tracking=local"], "tracking")
    assert found.fix.startswith("executor=local or sandbox=local instead of"), found.fix  # ReTool has one
