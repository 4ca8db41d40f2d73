"""`t3rl_core.score.bfcl` agrees with the env's own episode path: episodes of the shipped data played by
the reference engine with seeded faults through the real loop (text → SGLang parser → env), then the
calls the env received, as bfcl-eval's decoded form, scored by id with the public API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from t3rl_core import score
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.envs.bfcl import data as bfcl_data
from t3rl_core.envs.bfcl.world import render_call
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import ToolCallAction

# Faults a decoded trajectory can express (an unparsable output has no decoded form).
FAULTS = {"wrong_argument": 0.15, "extra_call": 0.1, "premature_answer": 0.1}
PER_CATEGORY = 4


class Recording:
    """The run's env factory, keeping every action each episode's env received with its turn."""

    def __init__(self, factory: Any) -> None:
        self.factory, self.actions = factory, {}

    def __call__(self, task: Any, mode: Any) -> Any:
        env = self.factory(task, mode)
        played = self.actions.setdefault((task["metadata"]["index"], mode), [])
        step = env.step

        async def recording_step(action: Any) -> Any:
            played.append((env.turn, action))
            return await step(action)

        env.step = recording_step
        return env

    async def aclose(self) -> None:
        await self.factory.aclose()


def decoded_form(played: list[tuple[int, Any]]) -> list[list[list[str]]]:
    turns: list[list[list[str]]] = []
    for turn, action in played:
        while len(turns) <= turn:
            turns.append([])
        if isinstance(action, ToolCallAction) and action.calls:
            turns[turn].append([render_call(call) for call in action.calls])
    return turns


@pytest.fixture(scope="module")
def chat() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")


def sample_rows(bfcl_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept: dict[str, list[dict[str, Any]]] = {}
    for row in bfcl_rows:
        group = kept.setdefault(row["metadata"]["data_source"], [])
        if len(group) < PER_CATEGORY and row["metadata"]["split"] == "test":
            group.append(row)
    return [row for group in kept.values() for row in group]


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_scoring_a_played_trajectory_gives_the_episode_verdict(bfcl_rows, chat, mode):
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
            "rollout": {"max_new_tokens": 32768},
        }
    )
    engine = ReferenceEngine(ReferenceEngineConfig(faults=FAULTS, seed=3), chat=chat)
    runner = EpisodeRunner.from_runtime(runtime, engine, chat=chat)
    recording = Recording(runner.env_factory)
    runner.env_factory = recording
    rows = sample_rows(bfcl_rows)

    async def play() -> list[Any]:
        try:
            return [await runner.run(row, mode) for row in rows]
        finally:
            await runner.aclose()

    results = asyncio.run(play())
    verdicts = set()
    for row, (episode, reward) in zip(rows, results, strict=True):
        task_id = row["metadata"]["index"]
        played = recording.actions[(task_id, mode)]
        verdict = score.bfcl(decoded_form(played), task_id=task_id, mode=mode)
        outcome = episode.outcome
        assert verdict.success == bool(outcome["accuracy"]), task_id
        assert verdict.details["turn_scores"] == outcome["turn_scores"], task_id
        assert verdict.details["error_type"] == outcome["failure"], task_id
        assert verdict.reward == pytest.approx(reward.value), task_id  # the progress reward
        verdicts.add(verdict.success)
    assert verdicts == {True, False}  # the faults made some episodes fail


def test_row_lookup_by_id_equals_the_prepared_row_without_building_splits(bfcl_rows, monkeypatch):
    def build_everything(*_: Any) -> None:
        raise AssertionError("bfcl_row built every row")

    monkeypatch.setattr(bfcl_data, "build_rows", build_everything)
    for row in sample_rows(bfcl_rows):
        assert score.bfcl_row(row["metadata"]["index"]) == row
    with pytest.raises(ValueError, match="unknown BFCL task id"):
        score.bfcl_row("multi_turn_base_9999")


def test_failed_turn_names_the_first_wrong_or_unreached_turn(bfcl_rows):
    row = sample_rows(bfcl_rows)[0]
    gold = [[turn] for turn in row["metadata"]["bfcl_task"]["ground_truth"]]
    task_id = row["metadata"]["index"]
    assert score.bfcl(gold, task_id=task_id).details["failed_turn"] is None
    cut = score.bfcl(gold[:2], task_id=task_id)
    assert not cut.success and cut.details["failed_turn"] == 2
    assert cut.details["error_type"] == "multi_turn:force_terminated"
    wrong = [gold[0], [], *gold[2:]]
    assert score.bfcl(wrong, task_id=task_id).details["failed_turn"] == 1


def test_scoring_works_inside_a_running_event_loop(bfcl_rows):
    row = sample_rows(bfcl_rows)[0]
    gold = [[turn] for turn in row["metadata"]["bfcl_task"]["ground_truth"]]

    async def inside() -> tuple[bool, bool]:
        sync = score.bfcl(gold, task_id=row["metadata"]["index"])
        native = await score.abfcl(gold, row=row)
        return sync.success, native.success

    assert asyncio.run(inside()) == (True, True)
