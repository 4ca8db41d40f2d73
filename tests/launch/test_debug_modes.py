"""Debug train stages (T3RL's debug_rollout.sh / debug_training.sh): rollout_only saves rollouts with
the rollout GPUs only, train_only trains on saved rollouts without SGLang; golden argv files, and the
config errors around them."""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan

GOLDEN = Path(__file__).with_name("golden")
RUN_DIR = Path("/RUN")
ENV_FREE = ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "SLIME_ROOT", "MEGATRON_ROOT")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def plan_of(*overrides: str):
    run = resolve(["+experiment=bfcl_debug", *overrides]).run
    return build_plan(run, PlanContext(RUN_DIR, Path("/BASE"), "/T3RL", "/venv/bin/python", "debug", {}))


@pytest.mark.parametrize(
    ("stage", "golden"), [("rollouts", "bfcl_debug_rollouts"), ("train", "bfcl_debug_train")]
)
def test_debug_argv_matches_its_golden_file(stage: str, golden: str) -> None:
    job = plan_of().stage(stage).slime_job
    assert list(job.argv) == (GOLDEN / f"{golden}.args").read_text().splitlines()
    assert job.script == "/root/slime/train.py"


def test_rollout_only_is_t3rls_debug_rollout() -> None:
    plan = plan_of()
    stage = plan.stage("rollouts")
    argv = list(stage.slime_job.argv)
    assert argv[argv.index("--save-debug-rollout-data") + 1] == (
        "/RUN/stages/rollouts/rollouts/rollout_data_{rollout_id}.pt"
    )
    assert argv[argv.index("--num-rollout") + 1] == "2" and "--num-epoch" not in argv
    assert argv[argv.index("--tensor-model-parallel-size") + 1] == "1"
    for absent in (
        "--recompute-granularity",
        "--use-dynamic-batch-size",
        "--sequence-parallel",
        "--eval-interval",
        "--eval-function-path",
        "--custom-eval-rollout-log-function-path",
        "--save-interval",
    ):
        assert absent not in argv, absent
    assert "checkpoint" not in stage.outputs  # nothing trains: no stage may take weights from it


def test_train_only_reads_the_saved_rollouts_without_sglang() -> None:
    plan = plan_of()
    argv = list(plan.stage("train").slime_job.argv)
    assert argv[argv.index("--load-debug-rollout-data") + 1] == plan.stage("rollouts").outputs["rollouts"] + (
        "/rollout_data_{rollout_id}.pt"
    )
    assert "--disable-rollout-global-dataset" in argv and argv[argv.index("--save-interval") + 1] == "1"
    assert not [t for t in argv if t.startswith("--sglang") or t.startswith("--custom-generate")]
    assert "--colocate" not in argv and "--rollout-num-gpus" not in argv
    assert plan.stage("train").inputs["rollouts"].stage == "rollouts"


def test_rollout_only_needs_only_the_rollout_gpus() -> None:
    split = ["hardware.colocate=false", "hardware.rollout_gpus=4", "hardware.gpus_per_node=4"]
    plan = plan_of(*split)
    assert plan.stage("rollouts").gpus == 4
    assert plan.stage("train").gpus == 4  # training GPUs only, no SGLang engines


def test_train_only_from_a_directory(tmp_path: Path) -> None:
    for i in range(2):
        (tmp_path / f"rollout_data_{i}.pt").write_bytes(b"")
    argv = list(plan_of(f"stages.train.rollouts_from={tmp_path}").stage("train").slime_job.argv)
    assert argv[argv.index("--load-debug-rollout-data") + 1] == f"{tmp_path}/rollout_data_{{rollout_id}}.pt"


@pytest.mark.parametrize(
    ("overrides", "key", "words"),
    [
        (["stages.train.rollouts_from=/nowhere"], "stages.train.rollouts_from", "lacks rollout_data_0.pt"),
        (["stages.train.rollouts_from=data"], "stages.train.rollouts_from", "saves no debug rollouts"),
        (["stages.train.rollouts_from=null"], "stages.train.rollouts_from", "names none"),
        (["stages.train.debug_num_rollout=3"], "stages.train.debug_num_rollout", "saves 2 rollouts"),
        (
            ["stages.rollouts.rollouts_from=train"],
            "stages.rollouts.rollouts_from",
            "only a debug: train_only",
        ),
        (["stages.train.init_from=rollouts"], "stages.train.init_from", "no weights"),
    ],
)
def test_debug_mistakes_are_config_errors(overrides: list[str], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plan_of(*overrides)
    assert any(p.key == key and words in p.message and p.fix for p in caught.value.problems), caught.value
