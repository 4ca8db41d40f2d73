"""BFCL's per-turn correctness as turn rewards, end to end on CPU through the hooks: slime's generate hook
plays a BFCL task twice (the gold actions; the same with the first turn answered without a call) against a
scripted SGLang stand-in, then the turn-credit reward post-process and each data-parallel rank's
advantage hook build the advantages, checked against MT-GRPO by hand from the episodes' outcomes."""

from __future__ import annotations

import asyncio
import itertools
import statistics
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pytest
import yaml

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import DONE_TEXT, BFCLEnv, BFCLTask
from t3rl_core.hooks.advantage import Topology, turn_level_advantages, turn_level_rewards
from t3rl_core.parsers.render import render_calls
from t3rl_core.types import Action, AnswerAction, ToolCallAction
from tests.support.scripted_sglang import generate_with_router
from tests.support.slime_sample import Sample
from tests.support.tiny_stack import bfcl_rows

if TYPE_CHECKING:
    import torch


# torch: bound by tests/hooks/conftest.py when the tests run, not imported at collection.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("torch_in_module")]

PARSER = "qwen25"


def runtime() -> RuntimeConfig:
    return RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": PARSER},
            "rollout": {"max_num_steps": 40, "max_new_tokens": 8192},
            "turn_credit": {"outcome_weight": 1.0},
        }
    )


def script(row: dict, policy: Callable[[int, Action], Action]) -> list[str]:
    """The texts of an episode that takes `policy(turn, gold action)` at every step (played on a BFCL
    world of its own, in train mode as the hook plays it)."""

    async def play() -> list[str]:
        env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(), "train")
        await env.reset()
        texts = []
        while (gold := env.oracle()) is not None:
            action = policy(env.turn, gold)
            texts.append(
                render_calls(PARSER, action.calls) if isinstance(action, ToolCallAction) else action.text
            )
            await env.step(action)
        return texts

    return asyncio.run(play())


def zscore(values: list[float]) -> list[float]:
    mean, std = statistics.fmean(values), statistics.stdev(values)
    return [(v - mean) / (std + 1e-6) for v in values]


def test_bfcl_turn_rewards_reach_the_advantages() -> None:
    row = next(r for r in bfcl_rows(per_category=1) if len(r["metadata"]["bfcl_task"]["ground_truth"]) >= 3)
    config = runtime()
    chat = ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
    gold = script(row, lambda turn, action: action)
    skip_first = script(row, lambda turn, action: AnswerAction(text=DONE_TEXT) if turn == 0 else action)
    samples = [
        generate_with_router(
            config, chat, texts, Sample(index=i, prompt=row["prompt"], metadata=dict(row["metadata"]))
        )
        for i, texts in enumerate((gold, skip_first))
    ]

    outcomes = [s.metadata["outcome"] for s in samples]
    n_turns = len(row["metadata"]["bfcl_task"]["ground_truth"])
    assert outcomes[0]["turn_rewards"] == [1.0] * n_turns
    assert outcomes[1]["turn_rewards"][0] == 0.0 and outcomes[1]["turn_rewards"][1:] == [1.0] * (n_turns - 1)
    records = [s.metadata["turn_credit"] for s in samples]
    for sample, record in zip(samples, records, strict=True):
        assert record["rewards"] == sample.metadata["outcome"]["turn_rewards"]
        spans = record["spans"]
        # Turns tile the response from the first model token; each starts with a model token.
        assert spans[0][0] == 0 and spans[-1][1] == sample.response_length
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert all(sample.loss_mask[start] == 1 for start, _ in spans)

    args = SimpleNamespace(n_samples_per_prompt=2, t3rl=yaml.safe_load(config.to_yaml())["t3rl"])
    raw, rewards = turn_level_rewards(args, samples)
    assert raw == [s.reward for s in samples] and raw[0] == 1.0 and raw[1] == pytest.approx(1 - 1 / n_turns)
    got = {}
    for partition in ([1], [0]):  # one sample of the group on each data-parallel rank
        data = {
            "rewards": [rewards[j] for j in partition],
            "response_lengths": [samples[j].response_length for j in partition],
            "loss_masks": [torch.tensor(samples[j].loss_mask, dtype=torch.int) for j in partition],
        }
        turn_level_advantages(args, data, topology=lambda: Topology())
        got |= dict(zip(partition, data["advantages"], strict=True))

    outcome = zscore(raw)
    first_turn = zscore([1.0, 0.0])  # turn 1: right vs answered without a call; later turns all equal
    for i, record in enumerate(records):
        expected = torch.full((samples[i].response_length,), outcome[i])
        for k, (start, end) in enumerate(record["spans"]):
            expected[start:end] = (first_turn[i] if k == 0 else 0.0) + outcome[i]
        assert torch.allclose(got[i], expected, atol=1e-5)
    # The skipped turn's tokens are pushed down harder than the rest of that episode.
    (start, end), (later, _) = records[1]["spans"][0], records[1]["spans"][1]
    assert float(got[1][start]) < float(got[1][later]) < 0
