"""ToolRL's KL-in-reward GRPO planned into slime: the golden argv of `toolrl_grpo`, the runtime config
the advantage hook reads, slime's own KL argument checks, and the debug stages."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from launch.plan.slime_args import HOOKS

GOLDEN = Path(__file__).with_name("golden")
ENV_FREE = ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "SLIME_ROOT", "MEGATRON_ROOT")
CUR = "stages.train.curriculum"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def plan_of(*overrides: str):
    run = resolve(list(overrides)).run
    return build_plan(run, PlanContext(Path("/RUN"), Path("/BASE"), "/T3RL", "/venv/bin/python", "kl", {}))


def runtime(plan, stage: str) -> dict:
    path = next(p for p in plan.files if p.endswith(f"/runtime/{stage}.yaml"))
    return yaml.safe_load(plan.files[path])["t3rl"]


def value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_toolrl_argv_matches_its_golden_file() -> None:
    argv = list(plan_of("+experiment=toolrl_grpo").stage("train").slime_job.argv)
    assert argv == (GOLDEN / "toolrl_grpo.args").read_text().splitlines()


def test_toolrl_puts_its_kl_in_the_reward() -> None:
    plan = plan_of("+experiment=toolrl_grpo")
    argv = list(plan.stage("train").slime_job.argv)
    assert value(argv, "--custom-advantage-function-path") == HOOKS["advantage"]
    assert value(argv, "--kl-coef") == "0.001" and value(argv, "--advantage-estimator") == "grpo"
    # slime: --kl-coef loads the reference from --ref-load; it refuses a non-zero --kl-loss-coef beside it.
    assert value(argv, "--ref-load").endswith("_torch_dist")
    assert "--use-kl-loss" not in argv and "--kl-loss-coef" not in argv
    assert runtime(plan, "train")["kl_in_reward"] == {"coef": 0.001, "type": "kl"}
    assert runtime(plan, "eval")["kl_in_reward"] is None  # nothing trains there
    module, _, name = HOOKS["advantage"].rpartition(".")
    assert callable(getattr(importlib.import_module(module), name))  # slime's load_function finds it


def test_without_the_section_slimes_grpo_is_planned_unchanged() -> None:
    plan = plan_of("+experiment=toolrl_grpo", f"{CUR}.algorithm.kl_in_reward=null")
    argv = list(plan.stage("train").slime_job.argv)
    assert "--kl-coef" not in argv and "--custom-advantage-function-path" not in argv


def test_a_kl_loss_at_zero_may_stay_beside_it() -> None:
    overrides = [f"{CUR}.algorithm.use_kl_loss=true", f"{CUR}.algorithm.kl_loss_coef=0"]
    argv = list(plan_of("+experiment=toolrl_grpo", *overrides).stage("train").slime_job.argv)
    assert float(value(argv, "--kl-loss-coef")) == 0 and value(argv, "--kl-coef") == "0.001"


def test_debug_stages_train_with_the_hook_and_roll_out_without_it() -> None:
    section = "curriculum.algorithm.kl_in_reward={coef:0.01,type:abs}"
    plan = plan_of("+experiment=bfcl_debug", f"stages.train.{section}", f"stages.rollouts.{section}")
    train = list(plan.stage("train").slime_job.argv)
    assert value(train, "--custom-advantage-function-path") == HOOKS["advantage"]
    assert value(train, "--kl-coef") == "0.01"
    assert runtime(plan, "train")["kl_in_reward"] == {"coef": 0.01, "type": "abs"}
    rollouts = list(plan.stage("rollouts").slime_job.argv)
    assert "--custom-advantage-function-path" not in rollouts and value(rollouts, "--kl-coef") == "0.01"
