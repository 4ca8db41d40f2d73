"""The tau2 config options compose, validate and plan without importing tau2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from t3rl_core.envs.tau2.users import LLMUserConfig, ScriptedUserConfig
from t3rl_core.rewards.tau2 import Tau2RewardConfig


def test_pipeline_experiment_chains_sft_rft_grpo_and_evaluates_pass_at_k():
    run = resolve(["+experiment=tau2_pipeline"]).run
    assert isinstance(run.env.user, LLMUserConfig) and isinstance(run.reward, Tau2RewardConfig)
    stages = run.stages
    assert [stages[name].init_from for name in ("sft", "rft", "grpo")] == [None, "sft", "rft"]
    sft, rft, grpo = (stages[name].curriculum for name in ("sft", "rft", "grpo"))
    assert (sft.mode, sft.train_split, sft.num_epoch, sft.optimizer.lr) == ("sft", "tau2_sft", 2, 1e-5)
    assert rft.dynamic_sampling_filter == "t3rl_core.rewards.tau2.rejection_sampling_filter"
    assert (rft.n_samples_per_prompt, rft.rollout_temperature) == (8, 0.8)
    assert (grpo.num_rollout, grpo.rollout_batch_size, grpo.n_samples_per_prompt, grpo.global_batch_size) == (
        200,
        16,
        4,
        64,
    )
    algo = grpo.algorithm
    assert (algo.kl_loss_coef, algo.entropy_coef, algo.eps_clip, algo.eps_clip_high) == (
        0.01,
        0.001,
        0.2,
        0.28,
    )
    assert grpo.optimizer.lr == 1e-6 and grpo.optimizer.weight_decay == 0.1
    evaluation = stages["eval"]
    assert evaluation.checkpoint == "grpo_hf"
    assert evaluation.eval["split"] == "tau2_test" and evaluation.eval["pass_k"] == [1, 2, 4]


def test_user_sim_and_domain_overrides():
    # Without an experiment the root eval split (bfcl_test) is not a tau2 split: name one.
    with pytest.raises(ConfigError, match="tau2_test"):
        resolve(["env=tau2"])
    # tau2's own reward: the default (progress) reads outcome fields tau2 does not produce.
    # The default model's qwen3-thinking needs a prompt that asks for <thinking>: tau2's asks for none.
    no_reasoning = ["model.parsers.reasoning_parser=null", "model.parsers.think_tags=null"]
    tau2 = ["env=tau2", "eval.split=tau2_test", "reward=tau2_shaped", *no_reasoning]
    run = resolve([*tau2, "env.domains=[retail]"]).run
    assert isinstance(run.env.user, ScriptedUserConfig) and run.env.domains == ["retail"]
    llm = resolve([*tau2, "user_sim=llm", "env.user.model=my-user"]).run.env.user
    assert isinstance(llm, LLMUserConfig) and llm.model == "my-user"
    with pytest.raises(ConfigError, match="telekom"):
        resolve([*tau2, "env.domains=[telekom]"])
    with pytest.raises(ConfigError, match=r"env\.user\.api_key") as rejected:
        resolve([*tau2, "user_sim=llm", "env.user.api_key=sk-123-secret"])
    assert "sk-123-secret" not in str(rejected.value)


def test_planning_imports_neither_tau2_nor_litellm():
    code = (
        "import sys; from launch.checks.resolve import resolve; resolve(['+experiment=tau2_pipeline']);"
        "from t3rl_core.registries import REWARDS, ENVS, USER_SIMULATORS, DATASETS;"
        "ENVS.config_class('tau2'); REWARDS.factory('tau2_shaped'); USER_SIMULATORS.factory('llm');"
        "print(sorted(m for m in ('tau2', 'litellm', 'openai', 'torch') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
