"""The shipped experiments carry the seed systems' values (t3rl notes §4, §11; each value's source is
in the YAML comment next to it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan

CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "test-run", {})


def runtime(plan, stage: str) -> dict:
    path = next(p for p in plan.files if p.endswith(f"/runtime/{stage}.yaml"))
    return yaml.safe_load(plan.files[path])["t3rl"]


@pytest.mark.parametrize("experiment", ["stage1_bfcl", "stage2_bfcl"])
def test_bfcl_stages_follow_t3rls_instruct2507_recipe(experiment: str) -> None:
    run = resolve([f"+experiment={experiment}"]).run
    plan = build_plan(run, CTX)
    train = runtime(plan, "train")
    assert train["env"]["max_step_limit"] == 20
    assert train["parsers"] == {
        "tool_call_parser": "qwen",
        "reasoning_parser": "qwen3-thinking",
        "think_tags": ["<thinking>", "</thinking>"],
    }
    assert train["mis"]["tis_level"] == "token" and train["mis"]["tis_mode"] == "truncate"
    eval_file = next(p for p in plan.files if p.endswith("/runtime/eval.eval.yaml"))
    assert yaml.safe_load(plan.files[eval_file])["split"] == "bfcl_unseen"
    # The eval server gets no reasoning parser whose <think> tags would disagree with <thinking>.
    assert "--reasoning-parser" not in plan.stage("eval").script()


def test_toolrl_defaults_to_its_readme_model_with_slimes_flags() -> None:
    from launch.plan.slime_args import model_args

    run = resolve(["+experiment=toolrl_grpo"]).run
    assert run.model.hf_id == "Qwen/Qwen2.5-3B-Instruct"
    # slime's scripts/models/qwen2.5-3B.sh, flag by flag (order aside).
    published = {
        "--swiglu": None, "--num-layers": "36", "--hidden-size": "2048", "--ffn-hidden-size": "11008",
        "--num-attention-heads": "16", "--use-rotary-position-embeddings": None,
        "--disable-bias-linear": None, "--add-qkv-bias": None, "--normalization": "RMSNorm",
        "--norm-epsilon": "1e-06", "--rotary-base": "1000000", "--group-query-attention": None,
        "--num-query-groups": "2", "--vocab-size": "151936",
    }  # fmt: skip
    argv = model_args(run.model.architecture)
    flags = {t: (argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None)
             for i, t in enumerate(argv) if t.startswith("--")}  # fmt: skip
    assert flags == published


def test_tau2_pipeline_carries_the_reference_options() -> None:
    run = resolve(["+experiment=tau2_pipeline"]).run
    plan = build_plan(run, CTX)
    sft = next(s for s in plan.stages if s.slime_job is not None)
    argv = list(sft.slime_job.argv)
    assert argv[argv.index("--lr-warmup-fraction") + 1] == "0.05"  # SFT: 5 % linear warm-up
    assert run.env.tool_result_role == "user"  # tool results as user messages
    from t3rl_core.envs.format_repair import REFERENCE_MESSAGE

    repair = run.env.format_repair  # one greedy retry with the reference's correction, word for word
    assert (repair.attempts, repair.temperature, repair.message) == (1, 0.0, REFERENCE_MESSAGE)
    assert (repair.keep_in_history.train, repair.keep_in_history.eval) == (False, True)
    eval_file = next(p for p in plan.files if p.endswith(".eval.yaml"))
    evaluated = yaml.safe_load(plan.files[eval_file])
    assert (evaluated["temperature"], evaluated["top_p"], evaluated["top_k"]) == (0.8, 1.0, 20)


def test_retool_rl_carries_agent_r1s_values() -> None:
    plan = build_plan(resolve(["+experiment=retool"]).run, CTX)
    argv = list(plan.stage("rl").slime_job.argv)
    assert argv[argv.index("--eps-clip-c") + 1] == "3.0"  # clip_ratio_c=3.0
    assert argv[argv.index("--kl-loss-coef") + 1] == "0.001"
    assert runtime(plan, "rl")["rollout"]["max_response_len"] == 16384  # max_response_length
