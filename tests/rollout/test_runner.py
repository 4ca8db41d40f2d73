"""EpisodeRunner: one task row in, an episode and its reward out, never an exception."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rewards.base import Reward, RewardInput, RewardResult
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import InvalidAction, ToolCallAction
from tests.rollout.fakes import TOOLS, ToyEnv, task
from tests.support import tiny_stack


def runtime(family: str = "qwen3", parser: str = "qwen25", **rollout: Any) -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir(family)), "chat_template": family},
            "parsers": {"tool_call_parser": parser, "think_tags": ["<thinking>", "</thinking>"]},
            "rollout": {"max_num_steps": 200, "tito_drift_check": True, **rollout},
        }
    )


class ToyFactory:
    def __init__(self, fail: bool = False) -> None:
        self.fail, self.envs, self.closed = fail, [], False

    def __call__(self, row, mode):
        if self.fail:
            raise KeyError("bfcl_task")
        self.envs.append(ToyEnv(row["metadata"]["questions"]))
        return self.envs[-1]

    async def aclose(self) -> None:
        self.closed = True


class TurnsReward(Reward):
    def __init__(self, fail: bool = False) -> None:
        self.fail, self.seen = fail, []

    def __call__(self, inp: RewardInput) -> RewardResult:
        self.seen.append(inp)
        if self.fail:
            raise ZeroDivisionError("no turns")
        return RewardResult(
            inp.outcome["turns_answered"] / inp.outcome["turns"], {"turns": inp.outcome["turns"]}
        )


def toy_runner(qwen_chat: ChatFormat, *, factory: ToyFactory | None = None, reward: Reward | None = None):
    engine = ReferenceEngine(ReferenceEngineConfig(), chat=qwen_chat)
    return EpisodeRunner(
        runtime(), engine, env_factory=factory or ToyFactory(), chat=qwen_chat, reward=reward or TurnsReward()
    )


def test_run_plays_and_scores_a_row(qwen_chat: ChatFormat) -> None:
    reward = TurnsReward()
    runner = toy_runner(qwen_chat, reward=reward)
    row = task(("Add 1 and 2.", "Add 3 and 4.")) | {"label": "7"}
    result, score = asyncio.run(runner.run(row, "eval", step=12))
    assert (result.status, score.value, score.metrics) == ("completed", 1.0, {"turns": 2})
    seen = reward.seen[0]
    assert (seen.label, seen.step, seen.metadata["tools"], seen.response) == (
        "7",
        12,
        TOOLS,
        result.response_text,
    )


def test_unplayable_rows_fail_with_the_prompt_kept(qwen_chat: ChatFormat) -> None:
    runner = toy_runner(qwen_chat, factory=ToyFactory(fail=True))
    result, score = asyncio.run(runner.run(task()))
    assert result.status == "failed"
    assert "cannot start the episode: KeyError" in result.error
    assert result.prompt_ids == qwen_chat.prompt_ids(task()["prompt"], TOOLS)
    assert (result.response_ids, score.value) == ([], 0.0)


def test_reward_errors_score_zero_and_are_reported(qwen_chat: ChatFormat) -> None:
    result, score = asyncio.run(toy_runner(qwen_chat, reward=TurnsReward(fail=True)).run(task()))
    assert result.status == "completed"
    assert score.value == 0.0
    assert "reward failed: ZeroDivisionError: no turns" in result.error


def test_parsers_are_cached_per_tool_list_and_accept_late_tools(qwen_chat: ChatFormat) -> None:
    runner = toy_runner(qwen_chat)
    assert runner.parser("tool_calls", TOOLS) is runner.parser("tool_calls", list(TOOLS))
    late = [{"type": "function", "function": {"name": "secret_tool", "parameters": {}}}]
    parser = runner.parser("tool_calls", TOOLS[:1], late)
    assert isinstance(parser, ToolCallActionParser)
    call = '<tool_call>\n{"name": "secret_tool", "arguments": {}}\n</tool_call>'
    assert isinstance(parser.parse(call), ToolCallAction)
    unknown = parser.parse('<tool_call>\n{"name": "nope", "arguments": {}}\n</tool_call>')
    assert isinstance(unknown, InvalidAction)
    assert "secret_tool" not in unknown.error  # a late tool is never revealed by an error message


def test_aclose_closes_env_factory_and_engine(qwen_chat: ChatFormat) -> None:
    factory = ToyFactory()
    asyncio.run(toy_runner(qwen_chat, factory=factory).aclose())
    assert factory.closed


@pytest.fixture(scope="module")
def bfcl_rows() -> list[dict[str, Any]]:
    return tiny_stack.bfcl_rows(per_category=2, split=None)


def bfcl_runner(family: str, parser: str, **engine: Any) -> tuple[EpisodeRunner, ReferenceEngine]:
    config = runtime(family, parser)
    chat = ChatFormat.from_config(config.chat)
    reference = ReferenceEngine(ReferenceEngineConfig(**engine), chat=chat)
    return EpisodeRunner.from_runtime(config, reference, chat=chat), reference


async def play(runner: EpisodeRunner, rows: list[dict[str, Any]]) -> list:
    return [await runner.run(row, "train") for row in rows]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "parser"), [("qwen3", "hermes"), ("glm4", "glm47"), ("llama3", "llama3")])
def test_bfcl_episodes_with_the_reference_policy(bfcl_rows, family: str, parser: str) -> None:
    """Gold actions through the real BFCL env: every category completes with full progress."""
    runner, _ = bfcl_runner(family, parser)
    for row, (result, score) in zip(bfcl_rows, asyncio.run(play(runner, bfcl_rows)), strict=True):
        assert result.status == "completed", (row["metadata"]["index"], result.error)
        assert (score.value, score.metrics["format_reward"]) == (1.0, 1.0)
        assert result.drift_at is None


@pytest.mark.slow
def test_bfcl_faulty_policy_gets_feedback_and_lower_reward(bfcl_rows) -> None:
    runner, reference = bfcl_runner(
        "qwen3", "qwen25", faults={"malformed_json": 0.4, "wrong_argument": 0.3}, seed=3
    )
    outcomes = asyncio.run(play(runner, bfcl_rows))
    assert reference.injected["malformed_json"] > 0 and reference.injected["wrong_argument"] > 0
    assert all(result.status in ("completed", "truncated") for result, _ in outcomes)
    assert min(score.metrics["format_reward"] for _, score in outcomes) < 1.0
    assert sum(score.value for _, score in outcomes) < len(outcomes)
    feedback = [
        m for result, _ in outcomes for m in result.messages if "Invalid output format" in str(m["content"])
    ]
    assert feedback and all(m["role"] in ("user", "tool") for m in feedback)
