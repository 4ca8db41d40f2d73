"""slime gets plugin code the way it gets t3rl's: the hook paths stay t3rl's, and the runtime YAML the
plan writes for a train stage names the plugin env and reward, which the generate and reward hooks then
build. The policy is a scripted server speaking SGLang's /generate (tests/support/scripted_sglang.py) that
reaches the counter's target, so the plugin env runs its tool and the plugin reward scores a success: a
real model behind a real server is tests/hooks/test_hooks_slime_e2e.py's (a random tiny model never
called the plugin's tool, and its server cost a fresh process loading torch)."""

import asyncio
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from launch.checks.resolve import resolve
from launch.plan.build import PlanContext, build_plan
from t3rl_core.chat.format import ChatFormat
from t3rl_core.hooks import slime as hooks
from tests.support.plugin_example import EXAMPLE_CONF
from tests.support.scripted_sglang import scripted_sglang
from tests.support.slime_sample import Sample
from tests.support.tiny_stack import shared_tiny_stack

pytestmark = pytest.mark.slow
SAMPLING = {"temperature": 1.0, "top_p": 1.0, "max_new_tokens": 64, "sampling_seed": 3}
# The counter from 0 to 7 in two calls (max_add is 5), then the answer.
SCRIPT = [
    '<tool_call>\n{"name": "add", "arguments": {"n": 5}}\n</tool_call>',
    '<tool_call>\n{"name": "add", "arguments": {"n": 2}}\n</tool_call>',
    "The counter is at 7.",
]


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
    from t3rl_counter.world import ADD_TOOL  # importable once example_on_path put the plugin on sys.path

    # A row as the plugin's prepare writes it.
    task = {"prompt": [{"role": "user", "content": "Use add to bring the counter from 0 to 7."}]}

    chat = ChatFormat.from_pretrained(model, runtime["t3rl"]["chat"]["chat_template"])
    args = SimpleNamespace(partial_rollout=False, custom_config_path=str(config))

    async def play():
        async with scripted_sglang(chat, SCRIPT, lambda text: "<tool_call>" in text) as (host, port):
            args.sglang_router_ip, args.sglang_router_port = host, port
            sample = Sample(
                index=0, group_index=0, prompt=task["prompt"], label=7, metadata={"tools": [ADD_TOOL]}
            )
            try:
                return await hooks.generate(args, sample, SAMPLING)
            finally:
                await hooks.close_runners()

    sample = asyncio.run(play())
    outcome = sample.metadata["outcome"]
    assert outcome == {"value": 7, "target": 7, "calls": 2, "answered": True}  # CounterEnv's, its add run
    assert sample.metadata["reward_metrics"] == {"reached": 1.0, "extra_calls": 0.0}  # ExactTarget's
    assert sample.reward == 1.0
    stored, sample.reward = sample.reward, None
    assert asyncio.run(hooks.reward_func(args, sample)) == stored
