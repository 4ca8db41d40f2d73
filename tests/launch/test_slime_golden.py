"""The train stages' slime commands, composed through the real config (Hydra + validation), against
T3RL's published stage-1 argv and t3rl's own stage-2 golden file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from launch.plan.slime_args import HOOK_FLAGS, HOOKS
from launch.plan.slime_options import argv_issues, is_flag
from t3rl_core.config import RuntimeConfig

REPO = Path(__file__).resolve().parents[2]
T3RL_GOLDEN = REPO / "tests" / "fixtures" / "golden" / "t3rl_stage1.args"
OWN_GOLDEN = Path(__file__).with_name("golden") / "stage2_bfcl.args"

# Golden hook paths are T3RL's own module layout; compared by role.
GOLDEN_HOOKS = {
    "t3rl.rollout.bfcl.generate": "generate",
    "t3rl.rollout.bfcl.log_rollout_data": "rollout_log",
    "t3rl.eval.bfcl.log_eval_rollout_data": "eval_rollout_log",
    "t3rl.rollout.bfcl.eval_rollout_with_metrics": "eval",
    "t3rl.mismatch.mis.compute_mis_weights_with_cp": "tis",
}
# Flags whose values are paths (compared by role), and the flag pairs t3rl adds on purpose
# (launch/plan/slime_args.py docstring): --load = --save for resume, the run's seed made explicit.
PATH_FLAGS = {
    "--hf-checkpoint",
    "--ref-load",
    "--save",
    "--prompt-data",
    "--custom-config-path",
    "--dump-details",
}
T3RL_EXTRAS = {"--load", "--seed", "--rollout-seed"}
RUN_DIR = Path("/RUN")
ENV_FREE = ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "SLIME_ROOT", "MEGATRON_ROOT")


def pairs(argv: list[str]) -> list[tuple[str, list[str]]]:
    """argv as (flag, values) in order."""
    out: list[tuple[str, list[str]]] = []
    for token in argv:
        if is_flag(token):
            out.append((token, []))
        else:
            out[-1][1].append(token)
    return out


def normalise(flag: str, values: list[str]) -> tuple[str, tuple[str, ...]]:
    """Numbers as floats, hook paths as roles, paths as <path>, the eval dataset name as <name>."""
    if flag in PATH_FLAGS:
        return flag, ("<path>",)
    if flag == "--eval-prompt-data":
        return flag, ("<name>", "<path>")
    if flag in HOOK_FLAGS:
        return flag, (GOLDEN_HOOKS.get(values[0]) or {v: k for k, v in HOOKS.items()}[values[0]],)
    return flag, tuple(_number(v) for v in values)


def _number(value: str) -> str:
    try:
        return repr(float(value))
    except ValueError:
        return value


@pytest.fixture
def clean_env(monkeypatch):
    for name in ENV_FREE:
        monkeypatch.delenv(name, raising=False)


def plan_of(experiment: str, *overrides: str):
    resolved = resolve([f"+experiment={experiment}", *overrides])
    ctx = PlanContext(RUN_DIR, Path("/BASE"), "/T3RL", "/venv/bin/python", f"{experiment}-test", {})
    return resolved.run, build_plan(resolved.run, ctx)


def test_stage1_argv_is_t3rls_published_argv(clean_env):
    assert T3RL_GOLDEN.exists(), f"golden argv missing: {T3RL_GOLDEN}"
    golden = [line for line in T3RL_GOLDEN.read_text().splitlines() if line]
    _, plan = plan_of("stage1_bfcl")
    job = plan.stage("train").slime_job
    ours = pairs(list(job.argv))

    extras = [(f, v) for f, v in ours if f in T3RL_EXTRAS]
    assert {f: v for f, v in extras} == {
        "--load": [str(RUN_DIR / "stages/train/checkpoint")],
        "--seed": ["42"],
        "--rollout-seed": ["42"],
    }
    assert dict(ours)["--load"] == dict(ours)["--save"]
    mine = [normalise(f, v) for f, v in ours if f not in T3RL_EXTRAS]
    theirs = [normalise(f, v) for f, v in pairs(golden)]
    assert mine == theirs  # same flags, same order, same values
    assert Path(job.script).name == "train.py"
    assert job.env_vars["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"


def test_stage1_paths_point_at_the_right_things(clean_env):
    run, plan = plan_of("stage1_bfcl")
    argv = dict(pairs(list(plan.stage("train").slime_job.argv)))
    data = plan.stage("data").outputs
    assert argv["--prompt-data"] == [data["split:bfcl_train_base"]]
    assert argv["--eval-prompt-data"] == ["bfcl_val", data["split:bfcl_val"]]
    assert argv["--ref-load"] == [plan.stage("to_torch_dist").outputs["torch_dist"]]
    assert argv["--ref-load"][0].startswith("/BASE/checkpoints/qwen3_4b_instruct_2507-")
    assert argv["--hf-checkpoint"] == ["/BASE/models/Qwen3-4B-Instruct-2507"]
    assert argv["--dump-details"] == [str(RUN_DIR / "stages/train/rollouts")]
    runtime_path = argv["--custom-config-path"][0]
    runtime = RuntimeConfig.model_validate(__import__("yaml").safe_load(plan.files[runtime_path])["t3rl"])
    assert runtime.chat.tokenizer == "/BASE/models/Qwen3-4B-Instruct-2507"
    assert runtime.rollout.max_new_tokens == 10000 and runtime.rollout.max_num_steps == 30
    assert runtime.parsers == run.model.parsers and runtime.reward.name == "progress"


def test_stage1_argv_is_accepted_by_slimes_option_set(clean_env):
    _, plan = plan_of("stage1_bfcl")
    assert argv_issues(plan.stage("train").slime_job.argv) == []
    golden = [
        line.replace("${", "/").replace("}", "") for line in T3RL_GOLDEN.read_text().splitlines() if line
    ]
    assert argv_issues(golden) == []  # the published argv itself passes the option table


def test_stage2_argv_matches_its_golden_file_exactly(clean_env):
    _, plan = plan_of("stage2_bfcl")
    job = plan.stage("train").slime_job
    expected = OWN_GOLDEN.read_text().splitlines()
    assert list(job.argv) == expected
    assert job.env_vars == {
        "PYTHONPATH": "/root/Megatron-LM:/T3RL:/root/slime",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
        "TENSORBOARD_DIR": str(RUN_DIR / "stages/train/tensorboard"),
    }


def test_two_stage_pipeline_chains_stage2_onto_stage1(clean_env):
    _, plan = plan_of("bfcl_env_tuning")
    one = dict(pairs(list(plan.stage("stage1").slime_job.argv)))
    two = dict(pairs(list(plan.stage("stage2").slime_job.argv)))
    assert two["--ref-load"] == one["--save"]
    assert two["--load"] == two["--save"] != one["--save"]
    assert one["--context-parallel-size"] == ["1"] and two["--context-parallel-size"] == ["4"]
    assert plan.stage("stage2").inputs["base"].stage == "stage1"
    convert = plan.stage("stage2_hf").script()
    assert f"{two['--save'][0]}/latest_checkpointed_iteration.txt" in convert
    eval_stage = plan.stage("eval")
    assert f"-m sglang.launch_server \\\n    --model-path {plan.stage('stage2_hf').outputs['hf']} " in (
        eval_stage.script()
    )


def test_runtime_env_never_holds_the_wandb_key(clean_env, monkeypatch):
    monkeypatch.setenv("WANDB_API_KEY", "sk-very-secret-key")
    resolved = resolve(["+experiment=stage1_bfcl", "tracking=wandb"])
    import os

    ctx = PlanContext(RUN_DIR, Path("/BASE"), "/T3RL", "/venv/bin/python", "x", dict(os.environ))
    plan = build_plan(resolved.run, ctx)
    job = plan.stage("train").slime_job
    text = json.dumps([list(job.argv), dict(job.env_vars)]) + plan.render_script()
    assert "sk-very-secret-key" not in text
    assert "--wandb-key" not in job.argv
    assert job.env_vars["WANDB_API_KEY"] == "${WANDB_API_KEY}"
    argv = dict(pairs(list(job.argv)))
    assert argv["--wandb-mode"] == ["online"] and "--use-wandb" in argv


def test_wandb_without_a_key_goes_offline_and_passes_no_key(clean_env, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    resolved = resolve(["+experiment=stage1_bfcl", "tracking=wandb"])
    plan = build_plan(resolved.run, PlanContext(RUN_DIR, Path("/BASE"), "/T3RL", "/py", "x", {}))
    job = plan.stage("train").slime_job
    assert dict(pairs(list(job.argv)))["--wandb-mode"] == ["offline"]
    assert "WANDB_API_KEY" not in job.env_vars
