"""tau2 episodes through the real episode loop: TITO token accounting with a tiny Qwen3 tokenizer, the
reference engine writing the gold plan as <tool_call> text, the tool-call parser, and the reward."""

from __future__ import annotations

import asyncio

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import SamplingParams
from t3rl_core.engines.config import ReferenceEngineConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.rollout.runner import EpisodeRunner


def _runner(env=None, **faults):
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "tau2", **(env or {})},
            "reward": {"name": "tau2_shaped"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "hermes"},
            "rollout": {"max_num_steps": 100, "max_new_tokens": 4096},
        }
    )
    chat = ChatFormat.from_config(runtime.chat)
    engine = ReferenceEngine(ReferenceEngineConfig(faults=faults, seed=3), chat=chat)
    return EpisodeRunner.from_runtime(runtime, engine, chat=chat)


@pytest.mark.slow
def test_gold_plan_through_the_episode_loop(base_rows):
    runner = _runner()
    cases = [("retail", "0", 1.2), ("airline", "1", 1.25), ("telecom", next(iter(base_rows["telecom"])), 1.4)]

    async def play():
        return [
            await runner.run(base_rows[domain][task_id], "eval", SamplingParams())
            for domain, task_id, _ in cases
        ]

    for (domain, task_id, expected), (episode, reward) in zip(cases, asyncio.run(play()), strict=True):
        assert episode.status == "completed", (domain, task_id, episode.error)
        assert episode.outcome["task_reward"] == 1.0
        # 1 + α·partial with every present component at 1 (retail α 0.2, airline 0.25, telecom 0.4)
        assert reward.value == pytest.approx(expected)
        roles = [m["role"] for m in episode.messages]
        assert roles[:3] == ["system", "user", "assistant"]  # the opening came from reset()
        assert episode.messages[2]["content"].startswith("<tool_call>")
        assert sum(episode.loss_mask) > 0 and len(episode.response_ids) == len(episode.log_probs)


@pytest.mark.slow
def test_injected_faults_become_feedback_not_crashes(base_rows):
    # without the format repair, a bad turn is an observation the model sees
    runner = _runner({"format_repair": None}, extra_call=0.3, malformed_json=0.3)

    async def play():
        return await runner.run(base_rows["retail"]["0"], "train", SamplingParams())

    episode, reward = asyncio.run(play())
    assert episode.status == "completed", episode.error
    assert runner.engine.injected["extra_call"] + runner.engine.injected["malformed_json"] > 0
    assert episode.outcome["format_errors"] == sum(runner.engine.injected.values())
    feedback = [
        m for m in episode.messages if m["role"] == "user" and m["content"].startswith("FORMAT ERROR")
    ]
    assert len(feedback) == episode.outcome["format_errors"]
    # the oracle offers the same gold step again after each bad turn, so the task is still solved
    assert episode.outcome["task_reward"] == 1.0 and reward.value == pytest.approx(1.2)


@pytest.mark.slow
def test_eval_reports_pass_at_k_per_domain(base_rows, tmp_path):
    from t3rl_core.eval.config import EvalConfig
    from t3rl_core.eval.runner import run_eval

    runtime = _runner().runtime
    rows = [next(iter(base_rows[domain].values())) for domain in ("airline", "retail", "telecom")]
    config = EvalConfig(split="tau2_test", samples=2, pass_k=[1, 2], concurrency=2)
    summary = asyncio.run(run_eval(runtime, config, rows, tmp_path, show_progress=False))
    assert sorted(summary["categories"]) == ["tau2_airline", "tau2_retail", "tau2_telecom"]
    for block in summary["categories"].values():
        # the gold plan solves every attempt: pass@1 = pass@2 = pass^2 = 1 per domain
        assert (block["tasks"], block["episodes"]) == (1, 2)
        assert block["pass@1"] == block["pass@2"] == block["pass^2"] == 1.0
