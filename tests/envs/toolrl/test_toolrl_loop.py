"""ToolRL through the real episode loop: one model call per row, the raw text (thinking included)
reaches the reward, and the training step reaches the step-dependent variants."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

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

TEST_PARQUET = Path(__file__).resolve().parents[2] / "fixtures" / "toolrl" / "rlla_4k_test.parquet"
# The tiny test tokenizer spends far more tokens per character than Qwen's (the longest gold answer
# exceeds ToolRL's 1024).
MAX_NEW_TOKENS = 8192


def runtime(reward: dict) -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "toolrl_single_turn", "data": {"splits": {"toolrl_test": str(TEST_PARQUET)}}},
            "reward": reward,
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen2_5")), "chat_template": "qwen2_5"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": {"max_num_steps": 1, "max_new_tokens": MAX_NEW_TOKENS},
        }
    )


def rows(config: RuntimeConfig, tmp_path: Path) -> list[dict]:
    written = DATASETS.factory("toolrl_single_turn")(config.env, tmp_path)
    return [json.loads(line) for line in written["toolrl_test"].read_text().splitlines()]


def test_reference_answers_score_the_published_maximum(tmp_path):
    config = runtime({"name": "toolrl"})
    chat = ChatFormat.from_config(config.chat)
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=chat)
    runner = EpisodeRunner.from_runtime(config, engine, chat=chat)
    sampling = SamplingParams(max_new_tokens=MAX_NEW_TOKENS)

    async def go():
        return [await runner.run(row, "eval", sampling) for row in rows(config, tmp_path)]

    results = asyncio.run(go())
    assert Counter(e.status for e, _ in results) == {"completed": 80}
    for episode, _ in results:
        assert episode.num_model_calls == 1 and episode.outcome["response"] == episode.outcome["ground_truth"]
    assert Counter(r.value for _, r in results) == {4.0: 71, 1.0: 9}


def test_step_reaches_the_two_stage_variant(tmp_path):
    config = runtime({"name": "toolrl", "max1_step30_max3": True})
    row = rows(config, tmp_path)[0]
    chat = ChatFormat.from_config(config.chat)

    def score(step: int, text: str) -> float:
        engine = ScriptedEngine(chat, [text], calls_tools=lambda _: False)
        runner = EpisodeRunner.from_runtime(config, engine, chat=chat)
        episode, reward = asyncio.run(runner.run(row, "train", step=step))
        assert episode.status == "completed" and episode.outcome["response"] == text
        return reward.value

    # Exact answer: before ToolRL step 30 (slime rollout 29) format 1 + correctness 1; from there on
    # format 0.5 + correctness 3.
    assert score(28, row["label"]) == 2.0
    assert score(29, row["label"]) == 3.5
    # Page 2 instead of "1": S = names 1 + keys 1 + values 0 = 2 of S_max 3 → 2·2/3 − 1 = 1/3 at step 0.
    wrong = row["label"].replace('"page": "1"', '"page": "2"')
    assert score(0, wrong) == pytest.approx(1 + 1 / 3)
