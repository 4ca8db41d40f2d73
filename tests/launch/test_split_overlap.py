"""An eval never scores tasks its checkpoint trained on (unless declared on purpose): every pair of a
training split and an evaluated split is refused exactly when the env's declared parts overlap, and
the fix applied validates without training on a held-out split."""

from __future__ import annotations

import itertools

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.tau2.config import Tau2EnvConfig

S1 = "+experiment=stage1_bfcl"
TRAIN = "stages.train.curriculum.train_split"
EVAL = "stages.eval.eval.split"
# The in-loop eval split stays disjoint from every train split tried here.
QUIET = [f"{S1}", "stages.train.curriculum.eval_split=null", "stages.train.curriculum.eval_interval=null"]
BFCL = BFCLEnvConfig().split_parts()


def _overlap(overrides: list[str]) -> list[Problem]:
    try:
        resolve(overrides)
    except ConfigError as error:
        return [p for p in error.problems if "memorised" in p.message]
    return []


@pytest.mark.parametrize(
    ("train", "scored"),
    [
        ("bfcl_train_base", "bfcl_train"),
        ("bfcl_train", "bfcl_unseen"),
        ("bfcl_test", "bfcl_unseen"),
        ("bfcl_all", "bfcl_test"),
        ("bfcl_train", "bfcl_all"),
        ("bfcl_val", "bfcl_test"),
    ],
)
def test_a_pair_is_refused_exactly_when_its_parts_overlap(train: str, scored: str) -> None:
    overrides = [*QUIET, f"{TRAIN}={train}", f"{EVAL}={scored}"]
    problems = _overlap(overrides)
    assert bool(problems) == bool(BFCL[train] & BFCL[scored]), problems
    if not problems:
        return
    problem = problems[0]
    fixed = problem.fix.split(";")[0].removeprefix("set ")
    key, value = fixed.split("=")
    assert key in (TRAIN, EVAL)
    if key == TRAIN:
        assert not any("test" in p or "val" in p for p in BFCL[value]), "a fix trains on held-out tasks"
    assert _overlap([*overrides, fixed]) == []
    assert _overlap([*overrides, "allow_train_eval_overlap=true"]) == []


def test_declared_parts_of_bfcl_match_its_id_split() -> None:
    for a, b in itertools.combinations(["bfcl_train", "bfcl_val", "bfcl_test"], 2):
        assert not BFCL[a] & BFCL[b]
    assert BFCL["bfcl_unseen"] == BFCL["bfcl_val"] | BFCL["bfcl_test"]
    assert BFCL["bfcl_train_base"] < BFCL["bfcl_train"]


def test_tau2_base_is_train_and_test_and_sft_is_its_source() -> None:
    parts = Tau2EnvConfig().split_parts()
    assert parts["tau2_base"] == parts["tau2_train"] | parts["tau2_test"]
    assert parts["tau2_sft"] == parts["tau2_train"]


def test_training_on_the_evaluated_tau2_test_split_is_refused() -> None:
    problems = _overlap(["+experiment=tau2_pipeline", "stages.grpo.curriculum.train_split=tau2_test"])
    assert problems and problems[0].fix.startswith("set stages.grpo.curriculum.train_split=tau2_train")
