"""verifiers environments through t3rl's episode loop against verifiers' own rollout of the same script:
the library's rollout talks to a scripted OpenAI-compatible server, t3rl's to a scripted engine writing
the same turns in the model family's text; the rubric's reward and scores must agree."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.registries import DATASETS
from t3rl_core.rollout.runner import EpisodeRunner
from tests.envs.verifiers.conftest import CALCULATOR
from tests.envs.verifiers.openai_standin import reply, scripted_server
from tests.rollout.fakes import ScriptedEngine

pytestmark = pytest.mark.slow  # verifiers' import tree and the tiny tokenizer: seconds once per process


def runtime(env_id: str, args: dict[str, Any], **rollout: Any) -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "verifiers", "id": env_id, "args": args},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": rollout,
        }
    )


@pytest.fixture(scope="module")
def chat() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


def prepared(config: RuntimeConfig, out: Path) -> dict[str, list[dict]]:
    written = DATASETS.factory("verifiers")(config.env, out)
    return {
        split: [json.loads(line) for line in path.read_text().splitlines()] for split, path in written.items()
    }


def library_rollout(config: RuntimeConfig, row: dict, script: list[dict]) -> dict[str, Any]:
    """verifiers' own rollout of the row's input against the scripted server (reward, scores, transcript)."""
    import verifiers as vf
    from openai import AsyncOpenAI
    from verifiers.clients import OpenAIChatCompletionsClient

    from t3rl_core.envs.verifiers.env import rollout_input

    vf_env = vf.load_environment(config.env.id, **config.env.args)

    async def go() -> dict[str, Any]:
        async with scripted_server(script) as url:
            client = OpenAIChatCompletionsClient(AsyncOpenAI(base_url=url, api_key="none"))
            return await vf_env.run_rollout(rollout_input(row), client, "scripted", {})

    return asyncio.run(go())


def t3rl_episode(config: RuntimeConfig, chat: ChatFormat, row: dict, texts: list[str]):
    engine = ScriptedEngine(chat, texts, calls_tools=lambda text: "<tool_call>" in text)
    runner = EpisodeRunner.from_runtime(config, engine, chat=chat)

    async def go():
        try:
            return await runner.run(row, "eval")
        finally:
            await runner.aclose()

    return asyncio.run(go())


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def test_prepare_writes_the_environments_datasets(tmp_path: Path) -> None:
    splits = prepared(runtime(CALCULATOR, {"num_examples": 3}), tmp_path)
    assert [len(splits[name]) for name in ("verifiers_train", "verifiers_eval")] == [3, 2]
    row = splits["verifiers_train"][1]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][1]["content"] == "What is 13 + 5? Use the add tool."
    assert row["label"] == "18" and row["metadata"]["index"] == 1
    (tool,) = row["metadata"]["tools"]
    assert tool["function"]["name"] == "add"
    assert set(tool["function"]["parameters"]["properties"]) == {"a", "b"}


def test_tool_env_scores_as_the_library_does(tmp_path: Path, chat: ChatFormat) -> None:
    config = runtime(CALCULATOR, {"num_examples": 2})
    row = prepared(config, tmp_path)["verifiers_train"][1]
    library = library_rollout(config, row, [reply(calls=[("add", {"a": 13, "b": 5})]), reply("It is 18.")])
    episode, reward = t3rl_episode(config, chat, row, [call("add", a=13, b=5), "It is 18."])
    assert library["reward"] == 1.5 and library["stop_condition"] == "no_tools_called"
    assert episode.status == "completed" and episode.num_model_calls == 2
    assert reward.value == library["reward"]
    assert reward.metrics == pytest.approx(library["metrics"])
    assert episode.outcome["stop_condition"] == library["stop_condition"]
    # The tool ran in verifiers' ToolEnv and its message is the episode's observation.
    tool_messages = [m for m in episode.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["18"]
    assert [m.get("content") for m in library["completion"] if m["role"] == "tool"] == ["18"]


def test_a_wrong_answer_scores_as_the_library_does(tmp_path: Path, chat: ChatFormat) -> None:
    config = runtime(CALCULATOR, {"num_examples": 1})
    row = prepared(config, tmp_path)["verifiers_train"][0]
    library = library_rollout(config, row, [reply("It is 8.")])
    _, reward = t3rl_episode(config, chat, row, ["It is 8."])
    assert library["reward"] == reward.value == 0.0
    assert reward.metrics == pytest.approx(library["metrics"])


def test_custom_env_response_and_stop_condition(tmp_path: Path, chat: ChatFormat) -> None:
    config = runtime("vf_guess", {"secret": 6})
    row = prepared(config, tmp_path)["verifiers_train"][0]
    guesses = ["3", "8", "6"]
    library = library_rollout(config, row, [reply(g) for g in guesses])
    episode, reward = t3rl_episode(config, chat, row, guesses)
    assert library["stop_condition"] == episode.outcome["stop_condition"] == "guessed"
    assert reward.value == pytest.approx(library["reward"]) == pytest.approx(1.0 + 0.25 / 3)
    hints = [m["content"] for m in episode.messages if m["role"] == "user"][1:]
    assert hints == ["No, higher.", "No, lower."]
    assert episode.outcome["turn_steps"] == [1, 1, 1]


def test_max_turns_come_from_the_environment(tmp_path: Path, chat: ChatFormat) -> None:
    config = runtime("vf_guess", {"secret": 6, "max_turns": 2})
    row = prepared(config, tmp_path)["verifiers_train"][0]
    episode, reward = t3rl_episode(config, chat, row, ["1", "2", "3"])
    assert episode.num_model_calls == 2 and episode.outcome["stop_condition"] == "max_turns_reached"
    assert reward.value == pytest.approx(0.25 / 2)


def test_a_t3rl_limit_ends_the_rollout_and_verifiers_scores_it(tmp_path: Path, chat: ChatFormat) -> None:
    config = runtime("vf_guess", {"secret": 6}, max_num_steps=1)
    row = prepared(config, tmp_path)["verifiers_train"][0]
    episode, reward = t3rl_episode(config, chat, row, ["1", "2"])
    assert episode.status == "truncated" and episode.num_model_calls == 1
    assert episode.outcome["stop_condition"] == "prompt_too_long" and episode.outcome["truncated"]
    assert reward.value == pytest.approx(0.25)  # not solved; few_guesses = 1 / one turn
