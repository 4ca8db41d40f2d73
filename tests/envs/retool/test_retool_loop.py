"""ReTool through the real episode loop: the "</code>" stop, the sandbox output spliced into the same
assistant turn (masked out of the loss), the turn limit, and the reward on the finished episode."""

from __future__ import annotations

import asyncio
import json

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.registries import DATASETS
from t3rl_core.rollout.runner import EpisodeRunner
from tests.rollout.fakes import ScriptedEngine

# Loading the tiny tokenizer (transformers) dominates: several seconds once per test process.
pytestmark = pytest.mark.slow

QUESTION = {"role": "user", "content": "What is 17 times 23?"}
TASK = {"prompt": [QUESTION], "metadata": {"tools": []}, "label": "391"}
CODE = "Let me compute.\n<code>\n```python\nprint(17 * 23)\n```\n</code>"
ANSWER = "So the answer is\n<answer>\n\\boxed{391}\n</answer>"


def runtime(**env: object) -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "retool_python", "sandbox": {"name": "local", "timeout_s": 5}, **env},
            "reward": {"name": "retool_outcome"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen2_5")), "chat_template": "qwen2_5"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": {"max_num_steps": 5, "max_new_tokens": 512},
        }
    )


def play(config: RuntimeConfig, texts: list[str]):
    chat = ChatFormat.from_config(config.chat)
    engine = ScriptedEngine(chat, texts, calls_tools=lambda _: False)
    runner = EpisodeRunner.from_runtime(config, engine, chat=chat)

    async def go():
        try:
            return await runner.run(TASK, "train")
        finally:
            await runner.env_factory.aclose()

    episode, reward = asyncio.run(go())
    return episode, reward, engine


def test_code_turn_then_answer():
    episode, reward, engine = play(runtime(), [CODE + "\nignored after the stop", ANSWER])
    assert episode.status == "completed", episode.error
    assert all("</code>" in s.stop for s in engine.samplings)
    interpreter = "\n<interpreter>\n391\n</interpreter>\n"
    # One assistant message: the code (cut right after "</code>"), the interpreter block, the answer.
    assert [m["role"] for m in episode.messages] == ["user", "assistant"]
    assert episode.messages[1]["content"] == CODE + interpreter + ANSWER
    assert episode.outcome["response"] == CODE + interpreter + ANSWER
    assert (episode.outcome["code_calls"], episode.num_model_calls) == (1, 2)
    # The interpreter tokens are observations: in the response, out of the loss.
    assert 0 < sum(episode.loss_mask) < len(episode.response_ids) == len(episode.loss_mask)
    assert reward.value == 1.0 and reward.metrics == {"score": 1.0, "format": 1.0, "graded": 1.0, "acc": 1.0}


def test_turn_limit_ends_after_the_last_code_runs():
    episode, reward, _ = play(runtime(max_turns=1), [CODE, ANSWER])
    assert episode.status == "truncated" and episode.num_model_calls == 1
    assert episode.messages[1]["content"].endswith("\n<interpreter>\n391\n</interpreter>\n")
    assert reward.value == -1.0


def test_reference_answers_on_the_builtin_test_split(tmp_path):
    config = runtime(data={"test_size": 4})
    written = DATASETS.factory("retool_python")(config.env, tmp_path)
    rows = [json.loads(line) for line in written["retool_test"].read_text().splitlines()]
    chat = ChatFormat.from_config(config.chat)
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    runner = EpisodeRunner.from_runtime(config, engine, chat=chat)

    async def go():
        try:
            return [await runner.run(row, "eval", SamplingParams(max_new_tokens=512)) for row in rows]
        finally:
            await runner.env_factory.aclose()

    results = asyncio.run(go())
    assert [e.status for e, _ in results] == ["completed"] * 4
    assert [r.value for _, r in results] == [1.0] * 4
