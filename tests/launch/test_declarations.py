"""Checks that follow from what components declare: estimators and filters (launch/config/algorithms.py),
and the eval server's counting (its TP against heads, node and memory)."""

from __future__ import annotations

from pathlib import Path

from launch.checks.resolve import resolve
from launch.config.algorithms import ESTIMATORS, filter_declaration
from launch.config.errors import ConfigError, Problem
from launch.plan.build import build_plan
from launch.plan.context import PlanContext

TAU2_RFT = ["+experiment=tau2_pipeline", "stages.rft.curriculum.global_batch_size=16"]


def _errors(overrides: list[str]) -> list[Problem]:
    try:
        resolve(overrides)
    except ConfigError as error:
        return error.problems
    return []


def test_rft_with_one_attempt_per_task_is_valid() -> None:
    # The rejection-sampling filter declares that it sets the advantages: no group baseline is taken.
    assert filter_declaration("t3rl_core.rewards.tau2.rejection_sampling_filter").sets_advantages
    assert _errors([*TAU2_RFT, "stages.rft.curriculum.n_samples_per_prompt=1"]) == []


def test_grpo_with_one_sample_and_no_such_filter_is_refused_with_a_supported_fix() -> None:
    key = "stages.grpo.curriculum.n_samples_per_prompt"
    problems = [p for p in _errors(["+experiment=tau2_pipeline", f"{key}=1"]) if "group of one" in p.message]
    assert problems and problems[0].key == key
    # No fix proposes an estimator t3rl cannot run.
    assert not any(name in problems[0].fix for name, e in ESTIMATORS.items() if e.unsupported)


def test_slimes_std_filter_is_declared_to_need_groups() -> None:
    path = "slime.rollout.filter_hub.dynamic_sampling_filters.check_reward_nonzero_std"
    assert filter_declaration(path).needs_groups and not filter_declaration(path).sets_advantages


def test_an_unsupported_estimator_is_refused_by_its_declaration() -> None:
    key = "stages.train.curriculum.algorithm.advantage_estimator"
    for name, estimator in ESTIMATORS.items():
        if estimator.unsupported:
            problems = [p for p in _errors(["+experiment=stage1_bfcl", f"{key}={name}"]) if p.key == key]
            assert problems and problems[0].message == estimator.unsupported


def test_the_671b_eval_server_gets_a_whole_node_and_a_warning() -> None:
    layout = ["hardware.nodes=16", "hardware.tensor_parallel=4", "hardware.expert_parallel=128"]
    layout += ["hardware.recompute.num_layers=1"]  # chunks that divide its 61 layers (rules/megatron.py)
    overrides = ["+experiment=stage1_bfcl", "model=deepseek_v3", "hardware=h200x8x2nodes", "executor=slurm"]
    resolved = resolve([*overrides, *layout])
    (warning,) = [p for p in resolved.warnings if p.key == "eval.server.tp"]
    assert "no server within one node" in warning.message and "engine.url" in warning.fix
    plan = build_plan(resolved.run, PlanContext(Path("/r"), Path("/b"), "/t", "python3", "id", {}))
    assert plan.stage("eval").gpus == 8  # not --tp 1: the largest TP a node gives


def test_an_eval_server_tp_is_counted_against_heads_and_memory() -> None:
    problems = [
        p for p in _errors(["+experiment=stage1_bfcl", "eval.server.tp=3"]) if p.key == "eval.server.tp"
    ]
    assert problems and "does not divide 32 attention heads" in problems[0].message
    fix = problems[0].fix.split(" (")[0].removeprefix("set ")
    assert not [p for p in _errors(["+experiment=stage1_bfcl", fix]) if p.key == "eval.server.tp"]


def test_slimes_own_assertions_on_its_argv_are_checked() -> None:
    from launch.plan.slime_constraints import violations

    assert list(violations(["--use-rollout-logprobs", "--use-tis"]))
    assert list(violations(["--kl-coef", "0.1", "--kl-loss-coef", "0.01"]))
    assert not list(violations(["--kl-coef", "0.1", "--kl-loss-coef", "0"]))  # 0 is off, as slime reads it
    assert list(violations(["--num-epoch", "2", "--num-rollout", "10"]))
    assert list(violations(["--get-mismatch-metrics"]))
    key = "model.architecture.extra_args"
    overrides = [
        "+experiment=stage1_bfcl",
        f"{key}=[--use-rollout-logprobs]",
        "stages.train.curriculum.algorithm.use_tis=true",
    ]
    (problem,) = [p for p in _errors(overrides) if p.key == key]
    assert problem.fix == f"set {key}=[]"


def test_tracker_names_follow_the_trackers_rules() -> None:
    problems = _errors(["+experiment=stage1_bfcl", "tracking=wandb", "tracking.project='team/proj:v1'"])
    (problem,) = [p for p in problems if p.key == "tracking.project"]
    assert problem.fix == "set tracking.project=team-proj-v1"
    assert _errors(["+experiment=stage1_bfcl", "tracking=wandb", "tracking.project=team-proj-v1"]) == []


def test_a_schedule_given_twice_and_a_wasted_over_sampling() -> None:
    cur = "stages.train.curriculum"
    (problem,) = [
        p for p in _errors(["+experiment=stage1_bfcl", f"{cur}.num_epoch=2"]) if "ignores" in p.message
    ]
    assert problem.key == f"{cur}.num_epoch" and problem.fix.startswith(f"set {cur}.num_rollout=null")
    resolved = resolve(
        [
            "+experiment=stage1_bfcl",
            f"{cur}.dynamic_sampling_filter=null",
            f"{cur}.over_sampling_batch_size=64",
        ]
    )
    assert [w for w in resolved.warnings if "wasted" in w.message]


def test_cuda_visible_devices_in_the_job_env_is_refused() -> None:
    problems = _errors(["+experiment=stage1_bfcl", "+hardware.env_vars.CUDA_VISIBLE_DEVICES='0,1'"])
    assert [p for p in problems if p.key == "hardware.env_vars.CUDA_VISIBLE_DEVICES"]


def test_lengths_leave_room_in_the_models_context(tmp_path: Path) -> None:
    import json

    cur = "stages.train.curriculum"
    base = ["+experiment=stage1_bfcl", "model=qwen3_8b", "hardware=h100x8"]
    (problem,) = [
        p for p in _errors([*base, f"{cur}.rollout_max_response_len=50000"]) if "context of" in p.message
    ]
    assert problem.key == f"{cur}.rollout_max_response_len"
    assert not [p for p in _errors([*base, problem.fix.removeprefix("set ")]) if "context of" in p.message]
    (problem,) = [p for p in _errors([*base, f"{cur}.max_context_len=65536"]) if "context of" in p.message]
    assert problem.fix == f"set {cur}.max_context_len=40960"
    (problem,) = [p for p in _errors([*base, "eval.max_new_tokens=40960"]) if "context of" in p.message]
    assert problem.key == "eval.max_new_tokens"
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 32768}))
    problems = _errors([*base, f"model.hf_checkpoint={tmp_path}"])
    assert [
        p for p in problems if p.key == "model.context_length" and p.fix == "set model.context_length=32768"
    ]


def test_an_eval_servers_pass_through_flags_are_read() -> None:
    key = "eval.server.extra_args"
    base = ["+experiment=stage1_bfcl"]
    (problem,) = [p for p in _errors([*base, f"{key}=[--mem-fraction-statc,'0.7']"]) if p.key == key]
    assert problem.fix == f"set {key}=[--mem-fraction-static,'0.7']"
    assert _errors([*base, problem.fix.removeprefix("set ")]) == []
    for bad in (
        "[--dp-size,'16']",
        "[--mem-fraction-static,'1.5']",
        "[--context-length,'9999999']",
        "[--dtype,fp7]",
    ):
        assert [p for p in _errors([*base, f"{key}={bad}"]) if p.key == key], bad
    plan = build_plan(
        resolve([*base, f"{key}=[--dp-size,'2']"]).run,
        PlanContext(Path("/r"), Path("/b"), "/t", "python3", "i", {}),
    )
    assert plan.stage("eval").gpus == 2
