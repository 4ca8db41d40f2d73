"""Hunt wave ten on the launcher's records and resume: kinds earlier waves left open.

- A stage's fingerprint holds what its output is, not where its store is: the entries of a content-keyed
  store a command names (`launch.plan.build.CONTENT_STORES`: the conversion cache in
  `paths.checkpoints_dir`) count relative to the store, so a store moved (another machine, the setting
  changed) reruns nothing; a record an older t3rl wrote is read and upgraded, not rerun.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pipeline_helpers import count, run, stage
from run_configs import make_run, t3rl_stages

from launch.plan.build import CONTENT_STORES, Plan, PlanContext, build_plan
from launch.plan.stages import DIR
from launch.run.pipeline import fingerprint, older_fingerprints

# --- kind 1: a store moved, its entries not --------------------------------------------------------


def _store_plan(run_dir: Path, marks: Path, store: Path) -> Plan:
    """A conversion into a content-keyed store, and a train stage reading it by its path there."""
    entry = store / "qwen-0123abcd_torch_dist"
    convert = stage("convert", marks, f"mkdir -p {entry} && echo w > {entry}/shard", verify={str(entry): DIR})
    train = stage("train", marks, f"test -s {entry}/shard && echo --ref-load={entry}", reads=("convert",))
    return Plan("test", run_dir, (convert, train), stores=(("checkpoints_dir", str(store)),))


@pytest.mark.parametrize("older", [False, True])
def test_a_store_moved_reruns_nothing_and_an_older_record_is_upgraded_not_rerun(
    tmp_path: Path, older: bool
) -> None:
    run_dir, marks, store, moved = (tmp_path / n for n in ("run", "marks", "ckpt", "elsewhere/ckpt"))
    run_dir.mkdir()
    marks.mkdir()
    plan = _store_plan(run_dir, marks, store)
    assert run(plan, run_dir).status == "succeeded"
    state_file = run_dir / "state.json"
    if older:  # as a t3rl before stores wrote it: the run dir alone anchored, the store's path absolute
        state = json.loads(state_file.read_text())
        for name, rec in state["stages"].items():
            rec["fingerprint"] = older_fingerprints(plan, plan.stage(name))[0]
        state_file.write_text(json.dumps(state))
        kept = run(plan, run_dir)
        assert [d.action for d in kept.decisions] == ["cached", "cached"]
        upgraded = json.loads(state_file.read_text())["stages"]
        assert {n: r["fingerprint"] for n, r in upgraded.items()} == {
            s.name: fingerprint(plan, s) for s in plan.stages
        }
    moved.parent.mkdir()
    shutil.move(store, moved)
    resumed = run(_store_plan(run_dir, marks, moved), run_dir)
    assert [(d.stage, d.action) for d in resumed.decisions] == [("convert", "cached"), ("train", "cached")]
    assert [count(marks, n, "done") for n in ("convert", "train")] == [1, 1]


def _plans(**paths: str) -> list[Plan]:
    plans = []
    for value in paths.values():
        run = make_run(stages=t3rl_stages(stage2=True))
        run = run.model_copy(update={"paths": run.paths.model_copy(update={"checkpoints_dir": value})})
        ctx = PlanContext(Path("/runs/r1"), Path("/base"), "/t3rl", "python3", "id", {})
        plans.append(build_plan(run, ctx))
    return plans


def test_every_stage_of_a_real_plan_keeps_its_fingerprint_wherever_the_store_is() -> None:
    """Over every stage kind that names the conversion cache: only where the store is changes, and no
    stage's fingerprint does; a stage that names no store keeps the fingerprint an older t3rl recorded
    (nothing to upgrade)."""
    assert CONTENT_STORES == ("checkpoints_dir",)
    here, there = _plans(here="/ckpt", there="/mnt/other/ckpt")
    named = [s.name for s in here.stages if "/ckpt/" in s.script()]
    assert named  # the conversion and the train stages reading it
    for a, b in zip(here.stages, there.stages, strict=True):
        assert a.script() != b.script() or a.name not in named
        assert fingerprint(here, a) == fingerprint(there, b), a.name
        assert (fingerprint(here, a) == older_fingerprints(here, a)[0]) == (a.name not in named), a.name


def test_a_store_counts_only_with_an_entry_below_it() -> None:
    """A path that merely begins as the store does (`/ckpt2/...`) is not one of its entries."""
    s = stage("s", Path("/m"), "cat /ckpt2/x")
    assert s.fingerprint("/r", (("checkpoints_dir", "/ckpt"),)) == s.fingerprint("/r")
    t = stage("s", Path("/m"), "cat /ckpt/x")
    u = stage("s", Path("/m"), "cat /c/x")
    assert t.fingerprint("/r", (("checkpoints_dir", "/ckpt"),)) == u.fingerprint(
        "/r", (("checkpoints_dir", "/c"),)
    )
