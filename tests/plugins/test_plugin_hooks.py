"""slime gets plugin code the way it gets t3rl's: the hook paths stay t3rl's, and the runtime YAML the
plan writes for a train stage names the plugin env and reward, which the generate and reward hooks then
build (the tiny model behind a local server speaking SGLang's /generate)."""

import asyncio
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from t3rl_core.hooks import slime as hooks
from tests.support.plugin_example import EXAMPLE_CONF
from tests.support.slime_sample import Sample
from tests.support.tiny_stack import generate_server, shared_tiny_stack

pytestmark = pytest.mark.slow
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 12, "sampling_seed": 3}


def test_the_hooks_build_the_plugins_the_runtime_yaml_names(example_on_path, tmp_path):
    _, model = shared_tiny_stack()
    run = resolve(["+experiment=counter_grpo"], [str(EXAMPLE_CONF)]).run
    context = PlanContext(tmp_path / "run", tmp_path, "/t3rl", sys.executable, "counter_grpo/1")
    plan = build_plan(run, context)
    train = plan.stage("train")
    assert "t3rl_core.hooks.slime.generate" in train.slime_job.argv  # the hooks stay t3rl's
    runtime = yaml.safe_load(plan.files[train.outputs["runtime_config"]])
    runtime["t3rl"]["chat"]["tokenizer"] = str(model)  # the tiny model stands in for Qwen3-4B
    config = Path(tmp_path / "runtime.yaml")
    config.write_text(yaml.safe_dump(runtime))
    task = {"prompt": [{"role": "user", "content": "Use add to bring the counter from 0 to 7."}]}

    with generate_server(model) as (host, port):
        args = SimpleNamespace(
            sglang_router_ip=host,
            sglang_router_port=port,
            partial_rollout=False,
            custom_config_path=str(config),
        )

        async def play():
            sample = Sample(index=0, group_index=0, prompt=task["prompt"], label=7, metadata={"tools": []})
            try:
                return await hooks.generate(args, sample, SAMPLING)
            finally:
                await hooks.close_runners()

        sample = asyncio.run(play())
    outcome = sample.metadata["outcome"]
    assert set(outcome) == {"value", "target", "calls", "answered"} and outcome["target"] == 7  # CounterEnv's
    assert set(sample.metadata["reward_metrics"]) == {"reached", "extra_calls"}  # ExactTarget's
    stored, sample.reward = sample.reward, None
    assert asyncio.run(hooks.reward_func(args, sample)) == stored
