"""One truth per setting: a value set in one place and silently replaced in another is refused, naming
both; hooks named by import path resolve, or the nearest existing path is proposed."""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError, Problem
from launch.config.fixes import list_override

EXPERIMENT = """# @package _global_
defaults:
  - {first}
  - /curriculum@stages.train.curriculum: bfcl_stage1
  - {last}
name: mine
stages:
  data:
    kind: prepare_data
  to_torch_dist:
    kind: convert_hf_to_torch_dist
  train:
    kind: train
    curriculum:
      num_rollout: 10
"""


def _problems(overrides: list[str], config_dirs: list[str] = ()) -> list[Problem]:
    try:
        resolve(overrides, config_dirs)
    except ConfigError as error:
        return error.problems
    return []


@pytest.fixture
def user_conf(tmp_path: Path) -> Path:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "self_first.yaml").write_text(
        EXPERIMENT.format(first="_self_", last="override /reward: progress")
    )
    (tmp_path / "experiment" / "self_last.yaml").write_text(
        EXPERIMENT.format(first="override /reward: progress", last="_self_")
    )
    return tmp_path


def test_an_experiment_value_a_later_default_replaces_is_refused(user_conf: Path) -> None:
    problems = _problems(["+experiment=self_first"], [str(user_conf)])
    key = "stages.train.curriculum.num_rollout"
    mine = [p for p in problems if p.key == key]
    assert mine, problems
    assert "self_first.yaml" in mine[0].source and "bfcl_stage1.yaml" in mine[0].message
    assert mine[0].fix.startswith(f"set {key}=10")
    # Applying the fix on the command line states the value last: accepted.
    assert not [
        p for p in _problems(["+experiment=self_first", f"{key}=10"], [str(user_conf)]) if p.key == key
    ]


def test_an_experiment_whose_own_values_come_last_is_accepted(user_conf: Path) -> None:
    problems = _problems(["+experiment=self_last"], [str(user_conf)])
    assert not [p for p in problems if "merged after" in p.message]


def test_a_service_url_the_user_also_set_is_refused() -> None:
    overrides = [
        "+experiment=tau2_pipeline",
        "+services.user_sim.model_path=/m",
        "+services.user_sim.gpus=[6,7]",
        "+services.user_sim.tp=2",
        "hardware.gpus_per_node=6",
        "hardware.node_gpus=8",
        "env.user.base_url=http://10.0.0.9:8000/v1",
    ]
    problems = [p for p in _problems(overrides) if p.key == "env.user.base_url"]
    assert problems and "services.user_sim" in problems[0].message


@pytest.mark.parametrize(
    ("key", "typo", "nearest"),
    [
        (
            "stages.train.curriculum.dynamic_sampling_filter",
            "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_stdd",
            "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std",
        ),
        (
            "stages.train.curriculum.dynamic_sampling_filter",
            "slime.rollout.filter_hub.dynamic_sampling_filter.check_reward_nonzero_std",
            "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std",
        ),
        (
            "stages.train.curriculum.dynamic_sampling_filter",
            "t3rl_core.rewards.tau2.rejection_sampling_filte",
            "t3rl_core.rewards.tau2.rejection_sampling_filter",
        ),
    ],
)
def test_a_misspelt_hook_gets_the_nearest_existing_path(key: str, typo: str, nearest: str) -> None:
    problems = [p for p in _problems(["+experiment=stage1_bfcl", f"{key}={typo}"]) if p.key == key]
    assert problems and problems[0].fix == f"set {key}={nearest}"
    assert not [p for p in _problems(["+experiment=stage1_bfcl", f"{key}={nearest}"]) if p.key == key]


def test_a_hook_flag_passed_through_is_resolved() -> None:
    key = "model.architecture.extra_args"
    overrides = ["+experiment=stage1_bfcl", f"{key}=[--custom-rm-path,t3rl_core.rewards.toolrl.nosuch]"]
    problems = [p for p in _problems(overrides) if p.key == key]
    assert problems and "does not resolve" in problems[0].message


@pytest.mark.parametrize(
    ("extra", "owner"),
    [
        (["--port", "31000"], "eval.server.port"),
        (["--tp-size=2"], "eval.server.tp"),
        (["--tool-call-parser", "qwen25"], "model.parsers.tool_call_parser"),
        (["--mem-fraction-static", "0.7", "--mem-fraction-static", "0.8"], None),
    ],
)
def test_a_server_flag_t3rl_writes_or_repeated_is_refused(extra: list[str], owner: str | None) -> None:
    key = "eval.server.extra_args"
    override = list_override(key, extra)
    problems = [p for p in _problems(["+experiment=stage1_bfcl", override]) if p.key == key]
    assert problems and (owner is None or owner in problems[0].message)
    fix = problems[0].fix.split(" (")[0].removeprefix("set ")
    assert not [p for p in _problems(["+experiment=stage1_bfcl", fix]) if p.key == key]


def test_a_job_variable_t3rl_derives_is_refused() -> None:
    overrides = [
        "+experiment=stage1_bfcl",
        "+hardware.env_vars.WANDB_DIR=/x",
        "+hardware.env_vars.NCCL_DEBUG=INFO",
    ]
    (problem,) = [p for p in _problems(overrides) if p.key == "hardware.env_vars.WANDB_DIR"]
    assert problem.fix.startswith("delete it: ~hardware.env_vars.WANDB_DIR (")
    fixed = [overrides[0], overrides[2]]  # the override dropped, as deleting the key does
    assert not [p for p in _problems(fixed) if p.key.startswith("hardware.env_vars")]


def test_every_unset_environment_variable_is_named_at_once() -> None:
    overrides = [
        "+experiment=stage1_bfcl",
        "model.hf_checkpoint=${oc.env:T3RL_TEST_UNSET_A}",
        "paths.models_dir=${oc.env:T3RL_TEST_UNSET_B}",
        "+hardware.env_vars.SOME_TOKEN=${oc.env:T3RL_TEST_UNSET_C}",  # read where the job runs
    ]
    problems = _problems(overrides)
    named = {p.key: p for p in problems if "not set here" in p.message}
    assert set(named) == {"model.hf_checkpoint", "paths.models_dir"}
    assert "T3RL_TEST_UNSET_A" in named["model.hf_checkpoint"].message


def test_an_experiment_built_on_another_replaces_its_values_on_purpose(tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "derived.yaml").write_text(
        "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\nname: derived\n"
    )
    assert not [p for p in _problems(["+experiment=derived"], [str(tmp_path)]) if "merged after" in p.message]
