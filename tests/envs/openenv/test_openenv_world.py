"""An OpenEnv environment through t3rl's episode loop, `t3rl eval` and slime's generate hook, against
OpenEnv's own client driving the same actions: the step rewards must agree."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.registries import DATASETS
from t3rl_core.rollout.runner import EpisodeRunner
from tests.envs.openenv.conftest import server_command
from tests.envs.openenv.counter_policy import move
from tests.rollout.fakes import ScriptedEngine
from tests.support.scripted_sglang import generate_with_router
from tests.support.slime_sample import Sample

pytestmark = pytest.mark.slow  # a uvicorn server per test and the tiny tokenizer


def runtime(port: int, **rollout: Any) -> RuntimeConfig:
    env = {
        "name": "openenv", "url": f"http://127.0.0.1:{port}", "command": server_command(port),
        "data": {"train_episodes": 3, "eval_episodes": 2},
    }  # fmt: skip
    return RuntimeConfig.model_validate(
        {
            "env": env,
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": rollout,
        }
    )


async def library_rewards(url: str, seed: int, deltas: list[int]) -> tuple[int, list[float]]:
    """OpenEnv's own client: reset with the task's seed, step the same moves (target, step rewards)."""
    from openenv.core.generic_client import GenericEnvClient

    async with GenericEnvClient(base_url=url) as client:
        target = (await client.reset(seed=seed)).observation["target"]
        return target, [(await client.step({"delta": d})).reward for d in deltas]


def test_the_server_is_given_once() -> None:
    with pytest.raises(ValidationError, match=r"exactly one of env\.url and env\.image"):
        OpenEnvEnvConfig()
    with pytest.raises(ValidationError, match=r"starts the server at env\.url"):
        OpenEnvEnvConfig(image="counter:latest", command=["serve"])


def test_episodes_score_as_the_environment_does(tmp_path: Path, port: int) -> None:
    config = runtime(port)
    written = DATASETS.factory("openenv")(config.env, tmp_path)
    rows = [json.loads(line) for line in written["openenv_train"].read_text().splitlines()]
    assert [r["metadata"]["openenv_reset"] for r in rows] == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    (tool,) = rows[0]["metadata"]["tools"]
    assert tool["function"]["name"] == "step"
    assert tool["function"]["parameters"]["properties"] == {"delta": {"title": "Delta", "type": "integer"}}
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    row = rows[1]  # target 4
    engine = ScriptedEngine(chat, [move(1), move(3)], calls_tools=lambda text: "<tool_call>" in text)
    runner = EpisodeRunner.from_runtime(config, engine, chat=chat)

    async def play():
        try:
            played = await runner.run(row, "eval")
            # The same moves through OpenEnv's own client, on the server the world started (its reset
            # with the task's seed begins the episode afresh): one server start, not two.
            return played, await library_rewards(config.env.url, 1, [1, 3])
        finally:
            await runner.aclose()  # stops the server the world started

    (episode, reward), (target, steps) = asyncio.run(play())
    assert episode.status == "completed" and episode.num_model_calls == 2
    assert [m["content"] for m in episode.messages if m["role"] == "tool"][-1] != ""
    assert target == 4 and steps == [-0.1, 1.0]
    assert reward.value == pytest.approx(sum(steps))
    assert episode.outcome["turn_rewards"] == pytest.approx(steps)


def test_t3rl_eval_with_a_scripted_policy(tmp_path: Path, port: int) -> None:
    runtime_file = tmp_path / "runtime.yaml"
    runtime_file.write_text(runtime(port).to_yaml())
    out = tmp_path / "eval"
    policy = "tests.envs.openenv.counter_policy:CounterPolicy"
    result = CliRunner().invoke(
        app,
        ["eval", "--runtime-config", str(runtime_file), "--engine", policy,
         "--split", "openenv_eval", "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    episodes = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sorted(e["reward"] for e in episodes) == [1.0, 1.0]  # one move to the target each


def test_slime_generate_hook(tmp_path: Path, port: int) -> None:
    config = runtime(port)
    row = json.loads(
        DATASETS.factory("openenv")(config.env, tmp_path)["openenv_train"].read_text().splitlines()[0]
    )
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")

    sample = Sample(index=0, prompt=row["prompt"], metadata=dict(row["metadata"]))
    sample = generate_with_router(config, chat, [move(2), move(1)], sample)
    assert sample.status == Sample.Status.COMPLETED
    assert sample.reward == pytest.approx(-0.1 + 1.0)  # seed 0: target 3, reached on the second move
    assert sample.metadata["turn_credit"]["rewards"] == pytest.approx([-0.1, 1.0])
    assert 0 in sample.loss_mask and 1 in sample.loss_mask
